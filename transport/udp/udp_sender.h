// The sending half of a udp connection: messages cut into packets numbered on one sequence space, sprayed
// over the connection's paths (udp_paths.h), paced and windowed by the congestion control (udp_congestion.h),
// and held to the receiver's window (bytes in flight plus those it holds for receives not yet posted).
// Acknowledgements carry a cumulative number and a SACK bitmap; lost packets - overtaken on their own path by
// one sent after them there (fast retransmit; paths overtake each other, which is not loss) or unacknowledged
// for the RTO (from the measured RTT, backed off while nothing arrives) - are resent alone, on another path
// where one works. The first expiry after progress only probes (the oldest packet again, as TCP's tail loss
// probe): a lost tail is recovered at one RTO, while a delay spike - a descheduled engine, a queue that briefly
// grew - costs one duplicate instead of a resent window and a halved rate; only a second expiry with nothing
// acknowledged is a timeout the control law hears. A connection that delivers nothing for the give-up budget
// fails, naming the peer: a link flap shorter than the budget costs its length, not the job (MegaScale's lesson).
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "congestion/retransmit_budget.h"
#include "congestion/rto_estimator.h"
#include "congestion/selective_repeat.h"
#include "congestion/sender_control.h"
#include "transport/udp/udp_half.h"
#include "transport/udp/udp_paths.h"

namespace megascale::transport {

/// A message as the sender holds it: the comm's, valid until done.
struct UdpOutgoing {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
  uint32_t tag = 0;
  bool done = false;
  // The sender's bookkeeping.
  uint64_t number = 0;
  uint64_t packets = 0;  // cut so far
  uint64_t acked = 0;
  bool cut = false;      // every packet of it exists
};

struct UdpSenderSetup {
  uint64_t remote_connection = 0;  // the receiver's id, in every data packet
  std::string peer;                // for errors and logs
  size_t payload_bytes = 8192;
  size_t window_bytes = 32 << 20;
  double line_bps = 10e9;
  Picoseconds rto_min = kMillisecond;
  Picoseconds give_up_after = 30 * kSecond;
};

class UdpSender : public UdpHalf {
 public:
  /// `notify`: a message completed or the connection failed (the comm wakes its waiters).
  UdpSender(const UdpSenderSetup& setup, UdpPaths paths, std::unique_ptr<congestion::SenderControl> control,
            DatagramOut& out, std::function<void()> notify);
  /// Logs what the connection went through (MEGASCALE_DEBUG=1): packets, resends and why, timeouts, the RTT.
  ~UdpSender() override;
  /// Queues a message (engine lock held); it leaves as the window and pacing allow.
  void post(UdpOutgoing* message);
  const Status& error() const { return error_; }

  void onPacket(const udp_wire::Header& header, const uint8_t* datagram, size_t size, uint8_t tos,
                Picoseconds now) override;
  Picoseconds step(Picoseconds now) override;

  // What happened, for tests and the benchmark.
  uint64_t retransmissions() const { return retransmissions_; }
  uint64_t timeouts() const { return timeouts_; }
  uint64_t probes() const { return probes_; }
  uint64_t lossesFromSacks() const { return losses_from_sacks_; }
  uint64_t packetsSent() const { return packets_sent_; }
  /// How late, on average, the engine ran this sender after the time its pacing asked to be woken at: what the
  /// simulator's wake_lateness stands for (0 before the first paced wake-up).
  Picoseconds meanWakeLateness() const {
    return paced_wakeups_ == 0 ? 0 : wake_lateness_total_ / static_cast<Picoseconds>(paced_wakeups_);
  }
  const UdpPaths& paths() const { return paths_; }
  const congestion::SenderControl& control() const { return *control_; }

 private:
  struct Packet {
    UdpOutgoing* message;
    uint64_t offset;
    uint32_t bytes;
    uint16_t path;
    bool acked = false;
    bool resend_queued = false;
    Picoseconds sent_at = 0;
  };
  Packet* find(uint64_t seq) {
    return seq >= base_seq_ && seq - base_seq_ < packets_.size() ? &packets_[seq - base_seq_] : nullptr;
  }
  /// Marks `seq` acknowledged; false if it already was (or is not ours).
  bool acknowledge(uint64_t seq, Picoseconds now, uint64_t* bytes);
  void queueResend(uint64_t seq);
  /// Sends packet `seq` (new or again) on a path; false when the socket buffer is full.
  bool transmit(uint64_t seq, Picoseconds now);
  /// The pacing gap after a packet this long on the wire: the law's, never shorter than the line rate's.
  Picoseconds gapFor(uint32_t wire_bytes) const;
  /// The next new packet's sequence number, cutting it from the queued messages; false when none is left.
  bool cutNext();
  void checkTimeouts(Picoseconds now);
  void checkPaths(Picoseconds now);
  void sendProbe(int path, Picoseconds now);
  void fail(Status s);
  bool windowOpen(uint32_t bytes) const;

  UdpSenderSetup setup_;
  UdpPaths paths_;
  std::unique_ptr<congestion::SenderControl> control_;
  DatagramOut& out_;
  std::function<void()> notify_;
  congestion::SelectiveRepeat repeat_;
  congestion::RtoEstimator rto_;
  congestion::RetransmitBudget budget_;

  std::deque<UdpOutgoing*> queue_;  // not fully cut, oldest first
  uint64_t next_message_ = 0;
  uint64_t cut_offset_ = 0;         // into queue_.front()
  std::deque<Packet> packets_;      // from base_seq_: every packet not yet acknowledged, and those after it
  uint64_t base_seq_ = 0;
  uint64_t next_seq_ = 0;           // the next new packet's
  uint64_t sent_seq_ = 0;           // new packets below this have left at least once
  std::deque<uint64_t> resend_;
  uint64_t in_flight_bytes_ = 0;    // sent, not acknowledged (lost ones included until resent and acknowledged)
  uint64_t in_flight_packets_ = 0;
  uint64_t peer_held_ = 0;
  uint64_t last_ack_number_ = 0;
  uint64_t judged_ack_number_ = 0;  // the newest acknowledgement whose SACK was taken in
  uint64_t judge_below_ = 0;        // and the end of what it could report
  Picoseconds next_send_ = 0;
  Picoseconds next_path_check_ = 0;
  Picoseconds window_probe_at_ = kNever;
  Picoseconds paced_wake_ = kNever;  // the wake-up step() last asked for to send a paced packet
  Picoseconds paced_from_ = 0;       // the gap before next_send_ counts from here,
  uint32_t paced_wire_ = 0;          // and is the law's for a packet this long on the wire (0: none sent yet)
  Picoseconds wake_lateness_total_ = 0;
  uint64_t paced_wakeups_ = 0;
  uint64_t probe_seq_ = 0;
  uint64_t retransmissions_ = 0, packets_sent_ = 0;
  bool probed_ = false;  // the first expiry since the last progress has sent its probe
  uint64_t timeouts_ = 0, resends_after_timeout_ = 0, losses_from_sacks_ = 0, probes_ = 0;
  Status error_;
};

}  // namespace megascale::transport
