// The simulated network: hosts (one NIC each; a MegaScale server with 8 rails is 8 hosts), output-queued switches
// with ECN marking and drop-tail buffers, full-duplex links (rate, propagation delay), shortest-path routing with
// ECMP by flow hash, and flows driven by any SenderControl (per-packet ACKs carrying the send time and the ECN
// echo; CNPs paced by the receiver). ACKs and CNPs use a strict-priority control queue on every port.
//
// A flow is a connection (an RDMA queue pair): messages appended to it are cut into packets of at most
// mtu_payload bytes (none spans two messages) and complete in order; its congestion control state carries over
// from one message to the next, as a NIC's per-QP state does.
//
// Lossless mode: PFC per ingress port on the data priority. Optional per-packet spraying. Lossy mode: senders
// recover with selective repeat (fast retransmit after 3 later ACKs, RTO from RFC 6298 with backoff) and give
// up after NetworkParams::give_up_after without progress.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "congestion/cnp_generator.h"
#include "congestion/ecn_marking.h"
#include "congestion/retransmit_budget.h"
#include "congestion/rto_estimator.h"
#include "congestion/selective_repeat.h"
#include "sim/event_queue.h"
#include "sim/process_stalls.h"

namespace megascale::sim {

enum class PacketKind : uint8_t { kData, kAck, kCnp, kPause, kResume };

struct Packet {
  PacketKind kind = PacketKind::kData;
  bool ecn = false;       // data: marked on the way; ACK: the echo
  uint16_t ecn_marks = 0;  // how many of a train's packets are marked (0 or 1 for a single packet)
  uint32_t wire_bytes = 0;
  uint32_t payload = 0;   // data bytes carried (echoed in the ACK)
  uint32_t flow = 0;
  uint64_t seq = 0;       // data: packet number within its flow (ACKs echo it)
  int src = 0, dst = 0;   // host indices
  Picoseconds sent_at = 0;  // data: when the sender sent it (echoed for the RTT)
  Picoseconds tail_at = 0;  // a train on its way: when its last packet is in at the node it goes to
  int in_port = -1;         // inside a switch: the port it came in by (PFC accounts per ingress port)
};

struct PortStats {
  uint64_t tx_bytes = 0, marks = 0, drops = 0;
  uint64_t max_queue_bytes = 0;
  uint64_t pauses_sent = 0;      // PFC PAUSE frames this port sent upstream
  Picoseconds paused_time = 0;   // how long this port's data was held by the peer's PAUSE
};

class Network;
class Node;

class Port : public EventHandler {
 public:
  Port(Network& net, Node& owner, int index, double rate_bps, Picoseconds delay)
      : net_(net), owner_(owner), index_(index), rate_bps_(rate_bps), delay_(delay) {}
  /// False when the data queue's drop-tail limit refused the packet.
  bool enqueue(const Packet& p);
  void onEvent(int kind, uint64_t arg) override;
  /// PFC: the peer asks this port to stop (or resume) sending data; control packets still flow.
  void setPaused(bool paused);
  /// A link down (a flap): everything sent on it is lost until it comes up again.
  void setDown(bool down) { down_ = down; }

  Node* peer = nullptr;
  int peer_port = -1;
  bool marks_ecn = false;
  congestion::EcnThresholds ecn;
  uint64_t buffer_bytes = UINT64_MAX;  // drop-tail limit of the data queue
  PortStats stats;
  uint64_t dataQueueBytes() const { return data_bytes_; }
  bool dataQueueEmpty() const { return data_.empty(); }
  double rateBps() const { return rate_bps_; }
  /// "n<node id>.p<port index>": names the port in CSV files and messages.
  std::string name() const;
  Picoseconds delay() const { return delay_; }

 private:
  void kick();
  void startNext();
  void mark(Packet& p);

  Network& net_;
  Node& owner_;
  int index_;
  double rate_bps_;
  Picoseconds delay_;
  std::deque<Packet> control_, data_;
  uint64_t data_bytes_ = 0;
  Picoseconds free_at_ = 0;     // when the packet on the wire has left
  bool wakeup_pending_ = false;  // a kTxDone is scheduled
  bool paused_ = false;
  bool down_ = false;
  Picoseconds paused_since_ = 0;
};

class Node {
 public:
  virtual ~Node() = default;
  virtual void receive(const Packet& p, int in_port) = 0;
  /// A port finished sending and its data queue is empty.
  virtual void onPortIdle(int) {}
  /// A data packet left one of this node's queues for the wire.
  virtual void onDataDequeued(const Packet&) {}
  /// When a packet this node would put on a wire at `t` goes: later only for a node that is a stalling process.
  virtual Picoseconds sendsAt(Picoseconds t) { return t; }
  std::vector<std::unique_ptr<Port>> ports;
  int id = 0;
  bool is_host = false;
};

class Switch : public Node {
 public:
  Switch(Network& net, uint64_t salt);
  void receive(const Packet& p, int in_port) override;
  void onDataDequeued(const Packet& p) override;
  Picoseconds sendsAt(Picoseconds t) override { return stalls_ ? stalls_->actsAt(t) : t; }
  /// The ports on a shortest path to host `dst` (empty when unreachable).
  const std::vector<int>& route(int dst) const { return route_lists_[route_of_[static_cast<size_t>(dst)]]; }
  /// Sets a destination's ports; destinations with the same ports share one list (all hosts behind one remote
  /// switch do), so a switch's table is 4 bytes per host and stays in cache.
  void setRoute(int dst, const std::vector<int>& ports);

 private:
  void sendPfc(int port, PacketKind kind);

  Network& net_;
  uint64_t salt_;
  uint64_t sprayed_ = 0;
  std::vector<uint32_t> route_of_;              // per destination host: index into route_lists_
  std::vector<std::vector<int>> route_lists_;
  std::map<std::vector<int>, uint32_t> route_index_;  // route_lists_ by content
  std::vector<uint64_t> ingress_bytes_;  // PFC: data bytes queued here per ingress port
  std::vector<bool> pausing_;            // PFC: ingress ports whose upstream we have paused
  std::optional<ProcessStalls> stalls_;  // a software switch's (NetworkParams::switch_stalls_per_second)
};

struct FlowResult {
  uint32_t id = 0;
  int src = 0, dst = 0;
  uint64_t bytes = 0;
  Picoseconds start = 0, finish = kNever;
  uint64_t retransmissions = 0;
  bool failed = false;  // gave up: no progress for NetworkParams::give_up_after
};

using ControlFactory = std::function<std::unique_ptr<congestion::SenderControl>()>;

class Host : public Node, public EventHandler {
 public:
  Host(Network& net, int index) : net_(net), index_(index) {}
  void receive(const Packet& p, int in_port) override;
  void onPortIdle(int) override { trySend(); }
  void onEvent(int kind, uint64_t arg) override;
  /// Makes `flow` eligible to send (from now, or from its start time) if it is not already.
  void activate(uint32_t flow);

 private:
  void trySend();
  void armTimer(uint32_t flow);
  void armRetransmitTimer(uint32_t flow);
  void onAck(const Packet& p);
  void onRetransmitTimer(uint32_t flow);
  void queueLost(uint32_t flow, const std::vector<uint64_t>& seqs);

  Network& net_;
  int index_;
  std::vector<uint32_t> active_;  // flows with data left to send from here
  size_t next_ = 0;               // round-robin position
  Picoseconds wake_at_ = kNever;
};

struct NetworkParams {
  uint32_t mtu_payload = 4096;
  uint32_t header_bytes = 64;   // per data packet on the wire
  /// The simulation unit, in packets: senders emit up to this many MTU packets of a message as one train, one
  /// event per hop instead of one per packet. A switch forwards a train packet by packet as a train of real packets
  /// would go: it starts once the first packet has arrived and cannot finish before the last has; hosts take it
  /// when the last packet is in. What a train loses is interleaving with other flows' packets inside it, and
  /// congestion control, ECN marks and ACKs per train instead of per packet.
  uint32_t unit_packets = 1;
  uint32_t control_bytes = 64;  // ACK and CNP size
  Picoseconds cnp_interval = 50 * kMicrosecond;
  uint64_t seed = 1;
  /// Per-packet spraying over all shortest paths instead of ECMP by flow.
  bool spraying = false;
  /// PFC (lossless mode): a switch pauses an upstream port when the data it has queued from that port exceeds
  /// pfc_pause_bytes, and resumes it below pfc_resume_bytes.
  bool pfc = false;
  uint64_t pfc_pause_bytes = 256 * 1024;
  uint64_t pfc_resume_bytes = 128 * 1024;
  /// Loss recovery: selective repeat, the RTO estimator's settings, and when a stalled flow gives up.
  congestion::RtoParams rto;
  Picoseconds give_up_after = 30 * kSecond;
  /// Hosts that pace in software (the udp transport) instead of a NIC: a pacing wake-up fires late, uniformly
  /// between 0 and twice this, and the sender catches up as that transport does (congestion/software_pacing.h).
  /// 0: a NIC's exact pacing.
  Picoseconds wake_lateness = 0;
  /// Switches that are processes (the test bed's): they stall this many times a second on average, each stall
  /// this long on average (sim/process_stalls.h), and what they would have sent meanwhile leaves when it ends.
  /// 0: a hardware switch's, never.
  double switch_stalls_per_second = 0;
  Picoseconds switch_stall_mean = 0;
};

class Network {
 public:
  explicit Network(const NetworkParams& params = {}) : params_(params), rng_(params.seed) {}

  int addHost();
  int addSwitch();
  /// A full-duplex link between two nodes (by node id).
  void connect(int a, int b, double rate_bps, Picoseconds delay) { connect(a, b, rate_bps, rate_bps, delay); }
  /// A link whose two directions differ in rate: a to b at `a_to_b_bps`.
  void connect(int a, int b, double a_to_b_bps, double b_to_a_bps, Picoseconds delay);
  /// Shortest paths from every switch to every host (call after the last connect).
  void computeRoutes();
  /// Marking and buffer of every switch port (hosts do not mark).
  void configureSwitchPorts(const std::function<void(Port&)>& configure);

  /// A flow of `bytes` starting at `start`: a connection carrying one message; its result is its FCT.
  uint32_t addFlow(int src_host, int dst_host, uint64_t bytes, Picoseconds start, const ControlFactory& control);
  /// A connection with nothing to send yet; send() appends messages to it.
  uint32_t addConnection(int src_host, int dst_host, const ControlFactory& control);
  /// Appends a message of `bytes` (> 0) to a connection, to go from now on (after what it already carries).
  void send(uint32_t flow, uint64_t bytes);
  /// Runs until every flow has finished or `end`; returns whether all finished.
  bool run(Picoseconds end = kNever);

  const std::vector<FlowResult>& results() const { return results_; }
  EventQueue& events() { return events_; }
  const NetworkParams& params() const { return params_; }
  int hostCount() const { return static_cast<int>(hosts_.size()); }
  /// Payload bytes of one simulated data unit (a train of unit_packets packets).
  uint32_t unitPayload() const { return params_.mtu_payload * params_.unit_packets; }
  /// Wire bytes of a data unit carrying `payload`: one header per packet.
  uint32_t dataWireBytes(uint32_t payload) const { return payload + packetsIn(payload) * params_.header_bytes; }
  /// Real packets in a data unit carrying `payload`.
  uint32_t packetsIn(uint32_t payload) const { return (payload + params_.mtu_payload - 1) / params_.mtu_payload; }
  Node& node(int id) { return *nodes_[static_cast<size_t>(id)]; }
  Host& host(int index) { return *hosts_[static_cast<size_t>(index)]; }
  int hostNode(int index) const { return host_nodes_[static_cast<size_t>(index)]; }
  std::vector<Port*> allPorts();
  std::vector<Port*> switchPorts();
  /// The egress ports a packet from host `src` to host `dst` crosses (the first of equal-cost choices); empty
  /// when unreachable.
  std::vector<const Port*> path(int src, int dst);
  uint64_t drops() const;

  // For Port and Host:
  uint64_t park(const Packet& p);  // an in-flight packet's slot, carried as an event argument
  Packet unpark(uint64_t slot);
  double uniform() { return std::uniform_real_distribution<double>(0, 1)(rng_); }

  struct Message {
    uint64_t first_seq, end_seq;  // its packets
    uint32_t last_payload;        // bytes in its last packet
  };
  struct Flow {
    FlowResult result;             // bytes: everything appended so far; finish: when the last of it was acknowledged
    std::unique_ptr<congestion::SenderControl> control;
    uint64_t acked = 0;            // bytes acknowledged
    uint64_t next_seq = 0;         // the first packet never sent
    uint32_t in_flight = 0;        // packets (not units) sent and neither acknowledged nor declared lost
    Picoseconds next_send = 0;
    Picoseconds paced_from = 0;     // the gap before next_send counts from here; it follows
    uint32_t paced_packets = 0;     // a unit of this many packets (0: none sent yet)
    uint32_t paced_wire = 0;        // of this many bytes each on the wire
    /// The gap after that unit, as the law sets it now (a software host's sender goes by it: SoftwarePacing).
    Picoseconds pacingGap() const { return paced_packets * control->pacingGap(paced_wire); }
    Picoseconds timer_armed = kNever;       // the control's timer
    Picoseconds retransmit_armed = kNever;  // the retransmit timer
    congestion::SelectiveRepeat reliability;
    congestion::RtoEstimator rto;
    congestion::RetransmitBudget budget;
    std::deque<uint64_t> resend;   // lost packets waiting to go again, oldest first
    std::vector<bool> queued;      // per packet (one entry each): waiting in `resend`
    std::deque<Message> messages;  // not yet wholly acknowledged, oldest first
    congestion::CnpGenerator cnp;              // the receiver's side: this flow's CNP pacing
    bool active = false;           // in its host's list of flows with data to send
    bool idle() const { return acked >= result.bytes; }
    bool ended() const { return result.failed || idle(); }
    bool hasDataToSend() const { return !resend.empty() || next_seq < queued.size(); }
    /// Payload bytes of packet `seq` (a packet of a message not yet wholly acknowledged).
    uint32_t payloadOf(uint64_t seq, uint32_t mtu) const;
  };
  Flow& flow(uint32_t id) { return flows_[id]; }
  /// Every message of `flow` up to the acknowledged prefix is complete: reports them in order.
  void completeMessages(uint32_t id);
  void failed(uint32_t id);
  /// Called when a message completes - its last byte acknowledged and every earlier message complete (collective
  /// replays start their next steps from it). For addFlow's flows that is the flow's end.
  std::function<void(uint32_t flow)> on_message_done;

 private:
  NetworkParams params_;
  EventQueue events_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Host*> hosts_;
  std::vector<int> host_nodes_;
  std::vector<Switch*> switches_;
  std::deque<Flow> flows_;  // a deque: references stay valid while callbacks add connections
  std::vector<FlowResult> results_;
  size_t unfinished_ = 0;  // messages not yet complete
  std::vector<Packet> parked_;
  std::vector<uint64_t> free_slots_;
  std::mt19937_64 rng_;
};

}  // namespace megascale::sim
