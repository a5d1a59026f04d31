#include "sim/network.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "congestion/software_pacing.h"

namespace megascale::sim {

namespace {

enum PortEvent { kTxDone = 0, kArrive = 1 };
enum HostEvent { kStart = 0, kWake = 1, kTimer = 2, kRetransmit = 3 };

uint64_t mix(uint64_t x) {  // splitmix64's finalizer: a flow's ECMP choice per switch
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

// ---------------------------------------------------------------------------------------------- ports

std::string Port::name() const { return "n" + std::to_string(owner_.id) + ".p" + std::to_string(index_); }

bool Port::enqueue(const Packet& p) {
  if (p.kind == PacketKind::kData) {
    if (data_bytes_ + p.wire_bytes > buffer_bytes) {
      ++stats.drops;
      return false;
    }
    data_.push_back(p);
    data_bytes_ += p.wire_bytes;
    stats.max_queue_bytes = std::max(stats.max_queue_bytes, data_bytes_);
  } else {
    control_.push_back(p);
  }
  kick();
  return true;
}

// A switch port whose queues are empty when it starts a packet schedules no event for the end of it (most ports,
// most of the time, in a large network): whatever arrives meanwhile asks for one at free_at_.
void Port::kick() {
  if (wakeup_pending_) return;
  if (net_.events().now() >= free_at_) {
    startNext();
    return;
  }
  wakeup_pending_ = true;
  net_.events().schedule(free_at_, this, kTxDone);
}

void Port::mark(Packet& p) {
  const uint32_t packets = net_.packetsIn(p.payload);
  if (packets == 1) {
    if (!p.ecn && congestion::shouldMark(data_bytes_, ecn, net_.uniform())) {
      p.ecn = true;
      p.ecn_marks = 1;
      ++stats.marks;
    }
    return;
  }
  const double probability = congestion::markingProbability(data_bytes_, ecn);
  if (probability <= 0) return;
  const uint32_t unmarked = packets - p.ecn_marks;
  for (uint32_t i = 0; i < unmarked; ++i) {
    if (net_.uniform() >= probability) continue;
    ++p.ecn_marks;
    ++stats.marks;
  }
  p.ecn = p.ecn_marks > 0;
}

void Port::setPaused(bool paused) {
  if (paused == paused_) return;
  const Picoseconds now = net_.events().now();
  paused_ = paused;
  if (paused) {
    paused_since_ = now;
    return;
  }
  stats.paused_time += now - paused_since_;
  kick();
}

void Port::startNext() {
  Packet p;
  if (!control_.empty()) {  // ACKs and CNPs first (strict priority)
    p = control_.front();
    control_.pop_front();
  } else if (!data_.empty() && !paused_) {
    p = data_.front();
    data_.pop_front();
    data_bytes_ -= p.wire_bytes;
    owner_.onDataDequeued(p);
    // Marked at dequeue, on the queue the packet leaves behind (as the HPCC simulator's switch does); each packet
    // of a train is marked on its own.
    if (marks_ecn) mark(p);
  } else {
    return;
  }
  const Picoseconds now = net_.events().now();
  Picoseconds done = now + serializationTime(p.wire_bytes, rate_bps_);
  Picoseconds head = done;  // when the next node can start on it
  const NetworkParams& params = net_.params();
  if (p.kind == PacketKind::kData && p.payload > params.mtu_payload) {  // a train: forwarded packet by packet
    const uint32_t last_payload = p.payload - (p.payload - 1) / params.mtu_payload * params.mtu_payload;
    head = now + serializationTime(params.mtu_payload + params.header_bytes, rate_bps_);
    done = std::max(done, p.tail_at + serializationTime(last_payload + params.header_bytes, rate_bps_));
  }
  stats.tx_bytes += p.wire_bytes;
  free_at_ = done;
  // A host's NIC always hears when it is free (the host sends its next packet then).
  if (owner_.is_host || !control_.empty() || (!data_.empty() && !paused_)) {
    wakeup_pending_ = true;
    net_.events().schedule(done, this, kTxDone);
  }
  if (down_) {  // sent into a dead link: lost
    ++stats.drops;
    return;
  }
  // A stalled process sends, when it runs again, what was due meanwhile (asked at the start, whose time never
  // runs back; a stall that begins during the frame's serialization is missed).
  const Picoseconds held = std::max<Picoseconds>(0, owner_.sendsAt(now) - done);
  p.tail_at = done + held + delay_;
  net_.events().schedule(peer->is_host ? p.tail_at : head + held + delay_, this, kArrive, net_.park(p));
}

void Port::onEvent(int kind, uint64_t arg) {
  if (kind == kArrive) {
    peer->receive(net_.unpark(arg), peer_port);
    return;
  }
  wakeup_pending_ = false;
  startNext();
  if (data_.empty()) owner_.onPortIdle(index_);
}

// ---------------------------------------------------------------------------------------------- switches

Switch::Switch(Network& net, uint64_t salt) : net_(net), salt_(salt) {
  const NetworkParams& params = net.params();
  if (params.switch_stalls_per_second > 0) {
    stalls_.emplace(params.switch_stalls_per_second, params.switch_stall_mean, salt);
  }
}

void Switch::sendPfc(int port, PacketKind kind) {
  Packet frame;
  frame.kind = kind;
  frame.wire_bytes = 64;
  ports[static_cast<size_t>(port)]->enqueue(frame);
  if (kind == PacketKind::kPause) ++ports[static_cast<size_t>(port)]->stats.pauses_sent;
}

void Switch::setRoute(int dst, const std::vector<int>& ports) {
  if (route_of_.size() <= static_cast<size_t>(dst)) route_of_.resize(static_cast<size_t>(dst) + 1, 0);
  auto [it, added] = route_index_.emplace(ports, static_cast<uint32_t>(route_lists_.size()));
  if (added) route_lists_.push_back(ports);
  route_of_[static_cast<size_t>(dst)] = it->second;
}

void Switch::receive(const Packet& arrived, int in_port) {
  if (arrived.kind == PacketKind::kPause || arrived.kind == PacketKind::kResume) {
    ports[static_cast<size_t>(in_port)]->setPaused(arrived.kind == PacketKind::kPause);
    return;
  }
  const std::vector<int>& candidates = route(arrived.dst);
  if (candidates.empty()) return;  // unreachable: computeRoutes found no path
  size_t pick = 0;
  if (candidates.size() > 1) {
    pick = net_.params().spraying && arrived.kind == PacketKind::kData
               ? mix(++sprayed_ ^ salt_) % candidates.size()
               : mix(arrived.flow * 0x9e3779b97f4a7c15ull ^ salt_) % candidates.size();
  }
  Packet p = arrived;
  p.in_port = in_port;
  const bool accepted = ports[static_cast<size_t>(candidates[pick])]->enqueue(p);
  if (!accepted || p.kind != PacketKind::kData || !net_.params().pfc) return;
  if (ingress_bytes_.empty()) {
    ingress_bytes_.assign(ports.size(), 0);
    pausing_.assign(ports.size(), false);
  }
  const auto in = static_cast<size_t>(in_port);
  ingress_bytes_[in] += p.wire_bytes;
  if (!pausing_[in] && ingress_bytes_[in] > net_.params().pfc_pause_bytes) {
    pausing_[in] = true;
    sendPfc(in_port, PacketKind::kPause);
  }
}

void Switch::onDataDequeued(const Packet& p) {
  if (!net_.params().pfc || p.in_port < 0 || ingress_bytes_.empty()) return;
  const auto in = static_cast<size_t>(p.in_port);
  ingress_bytes_[in] -= p.wire_bytes;
  if (pausing_[in] && ingress_bytes_[in] < net_.params().pfc_resume_bytes) {
    pausing_[in] = false;
    sendPfc(p.in_port, PacketKind::kResume);
  }
}

// ---------------------------------------------------------------------------------------------- hosts

void Host::activate(uint32_t id) {
  Network::Flow& f = net_.flow(id);
  if (f.active || f.ended()) return;
  f.active = true;
  active_.push_back(id);
  armTimer(id);
  trySend();
}

void Host::armTimer(uint32_t id) {
  Network::Flow& f = net_.flow(id);
  const Picoseconds t = f.control->nextTimer();
  if (t == kNever || (f.timer_armed != kNever && f.timer_armed <= t)) return;
  f.timer_armed = t;
  net_.events().schedule(t, this, kTimer, id);
}

// Keeps one data packet ready at the NIC: when its queue is empty, the next eligible flow (round robin) sends -
// eligible when it has a lost packet to resend or new data, room in its window and its pacing gap has passed.
// Lost packets go before new ones.
void Host::trySend() {
  Port& nic = *ports[0];
  if (!nic.dataQueueEmpty()) return;
  const Picoseconds now = net_.events().now();
  const bool software = net_.params().wake_lateness > 0;
  Picoseconds earliest = kNever;
  std::erase_if(active_, [&](uint32_t id) {
    Network::Flow& f = net_.flow(id);
    if (f.ended()) f.active = false;
    return !f.active;
  });
  for (size_t k = 0; k < active_.size(); ++k) {
    const size_t position = (next_ + k) % active_.size();
    const uint32_t id = active_[position];
    Network::Flow& f = net_.flow(id);
    if (!f.hasDataToSend()) continue;
    if (f.in_flight >= std::max(1.0, f.control->windowPackets())) continue;  // wait for an ACK
    if (software && f.paced_packets > 0) {
      f.next_send = congestion::SoftwarePacing::reconsidered(f.next_send, f.paced_from, f.pacingGap());
    }
    if (software ? !congestion::SoftwarePacing::due(f.next_send, now) : f.next_send > now) {
      earliest = std::min(earliest, software ? f.next_send - congestion::SoftwarePacing::kSlack : f.next_send);
      continue;
    }
    uint64_t seq;
    if (!f.resend.empty()) {
      seq = f.resend.front();
      f.resend.pop_front();
      f.queued[seq] = false;
      ++f.result.retransmissions;
    } else {
      seq = f.next_seq++;
    }
    const uint32_t payload = f.payloadOf(seq, net_.unitPayload());
    Packet p;
    p.kind = PacketKind::kData;
    p.wire_bytes = net_.dataWireBytes(payload);
    p.payload = payload;
    p.flow = id;
    p.seq = seq;
    p.src = index_;
    p.dst = f.result.dst;
    p.sent_at = now;
    const uint32_t packets = net_.packetsIn(payload);
    f.in_flight += packets;
    f.reliability.onSend(seq, now);
    f.paced_wire = p.wire_bytes / packets;
    f.paced_packets = packets;
    const Picoseconds gap = f.pacingGap();
    f.paced_from = software ? congestion::SoftwarePacing::from(f.next_send, now, gap) : now;
    f.next_send = f.paced_from + gap;
    f.control->onSent(now, p.wire_bytes);
    armTimer(id);
    armRetransmitTimer(id);
    next_ = position + 1;
    nic.enqueue(p);
    return;
  }
  if (earliest != kNever && (wake_at_ == kNever || earliest < wake_at_ || wake_at_ < now)) {
    // A software sender's timer fires late; the lateness is drawn once per wake-up, as a timer's would be.
    if (software) earliest += static_cast<Picoseconds>(net_.uniform() * 2 * static_cast<double>(net_.params().wake_lateness));
    wake_at_ = earliest;
    net_.events().schedule(earliest, this, kWake);
  }
}

// The retransmit timer runs while anything is outstanding; it is armed for an RTO from now and, when it fires
// early for the packets then outstanding, re-armed for the oldest one (a scan only once per RTO).
void Host::armRetransmitTimer(uint32_t id) {
  Network::Flow& f = net_.flow(id);
  if (f.retransmit_armed != kNever || f.reliability.outstanding() == 0 || f.ended()) return;
  f.retransmit_armed = net_.events().now() + f.rto.rto();
  net_.events().schedule(f.retransmit_armed, this, kRetransmit, id);
}

void Host::queueLost(uint32_t id, const std::vector<uint64_t>& seqs) {
  Network::Flow& f = net_.flow(id);
  for (uint64_t seq : seqs) {
    if (f.queued[seq]) continue;
    f.queued[seq] = true;
    f.resend.push_back(seq);
    f.in_flight -= net_.packetsIn(f.payloadOf(seq, net_.unitPayload()));  // it left the network
  }
}

void Host::onRetransmitTimer(uint32_t id) {
  Network::Flow& f = net_.flow(id);
  const Picoseconds now = net_.events().now();
  if (f.retransmit_armed != now || f.ended()) return;  // superseded
  f.retransmit_armed = kNever;
  const std::vector<uint64_t> lost = f.reliability.timedOut(now, f.rto.rto());
  if (!lost.empty()) {
    f.control->onTimeout(now);
    f.rto.onTimeout();
    f.budget.onTimeout(now);
    if (f.budget.exhausted(now)) {
      net_.failed(id);
      return;
    }
    queueLost(id, lost);
    armTimer(id);
  }
  const Picoseconds next = f.reliability.nextTimeout(f.rto.rto());
  if (next != kNever) {
    f.retransmit_armed = std::max(next, now + 1);
    net_.events().schedule(f.retransmit_armed, this, kRetransmit, id);
  }
  trySend();
}

void Host::onAck(const Packet& p) {
  Network::Flow& f = net_.flow(p.flow);
  if (f.ended()) return;
  const Picoseconds now = net_.events().now();
  const congestion::AckOutcome outcome = f.reliability.onAck(p.seq, now);
  if (!outcome.new_data) return;  // a duplicate (the packet was resent and both copies arrived)
  if (f.queued[p.seq]) {  // declared lost, then its ACK came after all: no need to resend
    f.queued[p.seq] = false;
    f.resend.erase(std::find(f.resend.begin(), f.resend.end(), p.seq));
  } else {
    f.in_flight -= net_.packetsIn(p.payload);
  }
  f.acked += p.payload;
  if (outcome.rtt_valid) f.rto.onSample(outcome.rtt);
  f.rto.onProgress();
  f.budget.onProgress();
  congestion::AckEvent event;
  event.now = now;
  event.rtt = outcome.rtt_valid ? outcome.rtt : 0;  // Karn: no sample from a resent packet
  // The control hears a train's ACK as one ACK per packet, each with its own ECN echo.
  const uint32_t packets = net_.packetsIn(p.payload), mtu = net_.params().mtu_payload;
  for (uint32_t i = 0; i < packets; ++i) {
    event.acked_bytes = i + 1 < packets ? mtu : p.payload - (packets - 1) * mtu;
    event.ecn_echo = i < p.ecn_marks;
    f.control->onAck(event);
  }
  const std::vector<uint64_t> lost = f.reliability.overtaken();
  if (!lost.empty()) {
    f.control->onLoss(now);
    queueLost(p.flow, lost);
  }
  armTimer(p.flow);
  net_.completeMessages(p.flow);
  trySend();
}

void Host::receive(const Packet& p, int) {
  const Picoseconds now = net_.events().now();
  Port& nic = *ports[0];
  switch (p.kind) {
    case PacketKind::kData: {
      Packet ack = p;
      ack.kind = PacketKind::kAck;
      ack.wire_bytes = net_.params().control_bytes;
      ack.src = index_;
      ack.dst = p.src;
      nic.enqueue(ack);
      if (net_.flow(p.flow).cnp.onArrival(now, p.ecn)) {
        Packet cnp = ack;
        cnp.kind = PacketKind::kCnp;
        nic.enqueue(cnp);
      }
      break;
    }
    case PacketKind::kAck:
      onAck(p);
      break;
    case PacketKind::kCnp:
      net_.flow(p.flow).control->onCnp(now);
      armTimer(p.flow);
      break;
    case PacketKind::kPause:
    case PacketKind::kResume:
      nic.setPaused(p.kind == PacketKind::kPause);
      break;
  }
}

void Host::onEvent(int kind, uint64_t arg) {
  const Picoseconds now = net_.events().now();
  if (kind == kStart) {
    activate(static_cast<uint32_t>(arg));
  } else if (kind == kWake) {
    if (wake_at_ == now) wake_at_ = kNever;
    trySend();
  } else if (kind == kRetransmit) {
    onRetransmitTimer(static_cast<uint32_t>(arg));
  } else {
    Network::Flow& f = net_.flow(static_cast<uint32_t>(arg));
    if (f.timer_armed > now) return;  // superseded by an earlier arming
    f.timer_armed = kNever;
    if (now >= f.control->nextTimer()) f.control->onTimer(now);
    armTimer(static_cast<uint32_t>(arg));
  }
}

// ---------------------------------------------------------------------------------------------- network

int Network::addHost() {
  auto host = std::make_unique<Host>(*this, static_cast<int>(hosts_.size()));
  host->id = static_cast<int>(nodes_.size());
  host->is_host = true;
  hosts_.push_back(host.get());
  host_nodes_.push_back(host->id);
  nodes_.push_back(std::move(host));
  return static_cast<int>(hosts_.size()) - 1;
}

int Network::addSwitch() {
  auto s = std::make_unique<Switch>(*this, mix(params_.seed * 1000003 + switches_.size()));
  s->id = static_cast<int>(nodes_.size());
  switches_.push_back(s.get());
  nodes_.push_back(std::move(s));
  return static_cast<int>(nodes_.size()) - 1;
}

void Network::connect(int a, int b, double a_to_b_bps, double b_to_a_bps, Picoseconds delay) {
  Node& x = node(a);
  Node& y = node(b);
  const int px = static_cast<int>(x.ports.size()), py = static_cast<int>(y.ports.size());
  x.ports.push_back(std::make_unique<Port>(*this, x, px, a_to_b_bps, delay));
  y.ports.push_back(std::make_unique<Port>(*this, y, py, b_to_a_bps, delay));
  x.ports.back()->peer = &y;
  x.ports.back()->peer_port = py;
  y.ports.back()->peer = &x;
  y.ports.back()->peer_port = px;
}

void Network::computeRoutes() {
  constexpr int kFar = std::numeric_limits<int>::max();
  std::vector<bool> is_host(nodes_.size(), false);
  for (int n : host_nodes_) is_host[static_cast<size_t>(n)] = true;
  std::vector<int> dist(nodes_.size()), frontier, next, ports;
  for (size_t h = 0; h < hosts_.size(); ++h) {
    std::fill(dist.begin(), dist.end(), kFar);
    frontier = {host_nodes_[h]};
    dist[static_cast<size_t>(host_nodes_[h])] = 0;
    for (int d = 1; !frontier.empty(); ++d) {  // breadth first; hosts other than h do not forward
      next.clear();
      for (int n : frontier) {
        if (d > 1 && is_host[static_cast<size_t>(n)]) continue;
        for (const auto& port : nodes_[static_cast<size_t>(n)]->ports) {
          int& pd = dist[static_cast<size_t>(port->peer->id)];
          if (pd == kFar) {
            pd = d;
            next.push_back(port->peer->id);
          }
        }
      }
      frontier.swap(next);
    }
    for (Switch* s : switches_) {
      const int mine = dist[static_cast<size_t>(s->id)];
      ports.clear();
      for (size_t p = 0; mine != kFar && p < s->ports.size(); ++p) {
        if (dist[static_cast<size_t>(s->ports[p]->peer->id)] == mine - 1) ports.push_back(static_cast<int>(p));
      }
      s->setRoute(static_cast<int>(h), ports);
    }
  }
}

void Network::configureSwitchPorts(const std::function<void(Port&)>& configure) {
  for (Switch* s : switches_) {
    for (auto& port : s->ports) configure(*port);
  }
}

std::vector<Port*> Network::allPorts() {
  std::vector<Port*> ports;
  for (auto& n : nodes_) {
    for (auto& p : n->ports) ports.push_back(p.get());
  }
  return ports;
}

std::vector<Port*> Network::switchPorts() {
  std::vector<Port*> ports;
  for (Switch* s : switches_) {
    for (auto& p : s->ports) ports.push_back(p.get());
  }
  return ports;
}

std::vector<const Port*> Network::path(int src, int dst) {
  std::vector<const Port*> hops;
  const Port* port = hosts_[static_cast<size_t>(src)]->ports[0].get();
  while (port != nullptr && hops.size() <= nodes_.size()) {
    hops.push_back(port);
    if (port->peer == &node(hostNode(dst))) return hops;
    const auto* s = dynamic_cast<const Switch*>(port->peer);
    if (s == nullptr || s->route(dst).empty()) return {};
    port = s->ports[static_cast<size_t>(s->route(dst).front())].get();
  }
  return {};
}

uint64_t Network::drops() const {
  uint64_t total = 0;
  for (const auto& n : nodes_) {
    for (const auto& p : n->ports) total += p->stats.drops;
  }
  return total;
}

uint32_t Network::addConnection(int src_host, int dst_host, const ControlFactory& control) {
  if (src_host < 0 || src_host >= hostCount() || dst_host < 0 || dst_host >= hostCount()) {
    throw std::invalid_argument("flow from host " + std::to_string(src_host) + " to host " + std::to_string(dst_host) +
                                ": no such host (the network has " + std::to_string(hostCount()) + ")");
  }
  const auto id = static_cast<uint32_t>(flows_.size());
  Flow f;
  f.result = FlowResult{id, src_host, dst_host, 0, events_.now(), events_.now(), 0, false};
  f.control = control();
  f.rto = congestion::RtoEstimator(params_.rto);
  f.budget = congestion::RetransmitBudget(params_.give_up_after);
  f.cnp = congestion::CnpGenerator(params_.cnp_interval);
  // Sprayed packets overtake each other by design: only the retransmit timer may declare them lost.
  f.reliability = congestion::SelectiveRepeat(params_.spraying ? 1 << 30 : 3);
  flows_.push_back(std::move(f));
  results_.push_back(flows_.back().result);
  return id;
}

namespace {

void appendMessage(Network::Flow& f, uint64_t bytes, uint32_t mtu) {
  if (bytes == 0) throw std::invalid_argument("a message needs at least one byte");
  const uint64_t first = f.queued.size(), packets = (bytes + mtu - 1) / mtu;
  f.messages.push_back({first, first + packets, static_cast<uint32_t>(bytes - (packets - 1) * mtu)});
  f.queued.resize(first + packets, false);
  f.result.bytes += bytes;
  f.result.finish = kNever;
}

}  // namespace

uint32_t Network::Flow::payloadOf(uint64_t seq, uint32_t mtu) const {
  const auto m = std::upper_bound(messages.begin(), messages.end(), seq,
                                  [](uint64_t s, const Message& msg) { return s < msg.end_seq; });
  return seq + 1 == m->end_seq ? m->last_payload : mtu;
}

uint32_t Network::addFlow(int src_host, int dst_host, uint64_t bytes, Picoseconds start, const ControlFactory& control) {
  const uint32_t id = addConnection(src_host, dst_host, control);
  Flow& f = flows_[id];
  appendMessage(f, bytes, unitPayload());
  f.result.start = start;
  // A software sender starts with its catch-up credit, as the transport's does (its first packet was due long ago).
  f.next_send = params_.wake_lateness > 0 ? start - kSecond : start;
  results_[id] = f.result;
  ++unfinished_;
  events_.schedule(start, hosts_[static_cast<size_t>(src_host)], kStart, id);
  return id;
}

void Network::send(uint32_t id, uint64_t bytes) {
  Flow& f = flows_.at(id);
  if (f.result.failed) return;
  appendMessage(f, bytes, unitPayload());
  results_[id] = f.result;
  ++unfinished_;
  hosts_[static_cast<size_t>(f.result.src)]->activate(id);
}

void Network::failed(uint32_t id) {
  Flow& f = flows_[id];
  if (f.result.failed) return;
  f.result.failed = true;
  results_[id] = f.result;
  unfinished_ -= f.messages.size();
}

void Network::completeMessages(uint32_t id) {
  Flow& f = flows_[id];
  while (!f.messages.empty() && f.reliability.cumulativeAck() >= f.messages.front().end_seq) {
    f.messages.pop_front();
    --unfinished_;
    if (f.messages.empty()) {
      f.result.finish = events_.now();
      f.retransmit_armed = kNever;
    }
    results_[id] = f.result;
    if (on_message_done) on_message_done(id);
  }
}

bool Network::run(Picoseconds end) {
  while (unfinished_ > 0 && events_.step(end)) {
  }
  return unfinished_ == 0;
}

uint64_t Network::park(const Packet& p) {
  if (free_slots_.empty()) {
    parked_.push_back(p);
    return parked_.size() - 1;
  }
  const uint64_t slot = free_slots_.back();
  free_slots_.pop_back();
  parked_[slot] = p;
  return slot;
}

Packet Network::unpark(uint64_t slot) {
  free_slots_.push_back(slot);
  return parked_[slot];
}

}  // namespace megascale::sim
