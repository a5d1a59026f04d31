#include "transport/udp/udp_sender.h"

#include <algorithm>

#include "common/log.h"
#include "congestion/software_pacing.h"
#include "transport/udp/udp_congestion.h"

namespace megascale::transport {

namespace {

// A socket whose buffer was full is tried again this soon.
constexpr Picoseconds kBlockedRetry = 50 * kMicrosecond;
// A path (a flow's 5-tuple, on one rail) keeps its packets in order, as an ECMP fabric keeps a flow's: one packet
// sent after another on the same path arriving first means the other was lost. TCP's three are for reordering
// within a path; across paths, the spray's reordering is no evidence at all (the paths are judged apart).
constexpr int kOvertakenOnItsPath = 1;

}  // namespace

UdpSender::UdpSender(const UdpSenderSetup& setup, UdpPaths paths, std::unique_ptr<congestion::SenderControl> control,
                     DatagramOut& out, std::function<void()> notify)
    : setup_(setup), paths_(std::move(paths)), control_(std::move(control)), out_(out), notify_(std::move(notify)),
      repeat_(kOvertakenOnItsPath), rto_(udpRtoParams(setup.rto_min, setup.give_up_after)), budget_(setup.give_up_after) {}

void UdpSender::post(UdpOutgoing* message) {
  message->number = next_message_++;
  message->packets = message->acked = 0;
  message->cut = message->done = false;
  queue_.push_back(message);
}

void UdpSender::fail(Status s) {
  if (error_.isOk()) error_ = std::move(s);
  notify_();
}

bool UdpSender::windowOpen(uint32_t bytes) const {
  const double window = std::max(1.0, control_->windowPackets());
  return static_cast<double>(in_flight_packets_) < window &&
         in_flight_bytes_ + bytes + peer_held_ <= setup_.window_bytes;
}

bool UdpSender::cutNext() {
  if (queue_.empty()) return false;
  UdpOutgoing* m = queue_.front();
  const auto bytes = static_cast<uint32_t>(std::min<uint64_t>(setup_.payload_bytes, m->size - cut_offset_));
  packets_.push_back(Packet{m, cut_offset_, bytes, 0});
  ++m->packets;
  ++next_seq_;
  cut_offset_ += bytes;
  if (cut_offset_ >= m->size) {
    m->cut = true;
    queue_.pop_front();
    cut_offset_ = 0;
  }
  return true;
}

bool UdpSender::transmit(uint64_t seq, Picoseconds now) {
  Packet& p = *find(seq);
  const int path = paths_.next();
  udp_wire::Header h{udp_wire::kMagic, udp_wire::kData, 0, static_cast<uint16_t>(path), setup_.remote_connection, seq,
                     now / kNanosecond};
  udp_wire::Data d{p.message->number, p.message->size, p.offset, p.message->tag, p.bytes};
  uint8_t head[udp_wire::kDataHeaderBytes];
  std::memcpy(head, &h, sizeof(h));
  std::memcpy(head + sizeof(h), &d, sizeof(d));
  if (!out_.send(paths_.localFlow(path), paths_.remote(path), head, sizeof(head), p.message->data + p.offset, p.bytes)) {
    return false;
  }
  if (seq >= sent_seq_) {
    in_flight_bytes_ += p.bytes;
    ++in_flight_packets_;
    sent_seq_ = seq + 1;
  } else {
    ++retransmissions_;
  }
  p.path = static_cast<uint16_t>(path);
  paths_.onSent(path, now);
  p.sent_at = now;
  p.resend_queued = false;
  repeat_.onSend(seq, now, static_cast<uint16_t>(path));
  control_->onSent(now, p.bytes + sizeof(head));
  ++packets_sent_;
  return true;
}

UdpSender::~UdpSender() {
  using ull = unsigned long long;
  MSC_LOG_DEBUG("udp: connection to %s: %llu packets sent, %llu resent (%llu found lost by SACKs, %llu probes, "
                "%llu after %llu timeouts), srtt %.1f us, rto %.1f us, paced wake-ups %.1f us late",
                setup_.peer.c_str(), static_cast<ull>(packets_sent_), static_cast<ull>(retransmissions_),
                static_cast<ull>(losses_from_sacks_), static_cast<ull>(probes_), static_cast<ull>(resends_after_timeout_),
                static_cast<ull>(timeouts_),
                static_cast<double>(rto_.srtt()) / kMicrosecond, static_cast<double>(rto_.rto()) / kMicrosecond,
                static_cast<double>(meanWakeLateness()) / kMicrosecond);
}

void UdpSender::queueResend(uint64_t seq) {
  Packet* p = find(seq);
  if (p == nullptr || p->acked || p->resend_queued || seq >= sent_seq_) return;
  p->resend_queued = true;
  resend_.push_back(seq);
}

bool UdpSender::acknowledge(uint64_t seq, Picoseconds now, uint64_t* bytes) {
  Packet* p = find(seq);
  if (p == nullptr || p->acked || seq >= sent_seq_) return false;
  p->acked = true;
  repeat_.onAck(seq, now);
  in_flight_bytes_ -= p->bytes;
  --in_flight_packets_;
  paths_.onDelivered(p->path, now);
  UdpOutgoing* m = p->message;
  if (++m->acked == m->packets && m->cut) {
    m->done = true;
    notify_();
  }
  *bytes = p->bytes;
  return true;
}

void UdpSender::onPacket(const udp_wire::Header& h, const uint8_t* datagram, size_t size, uint8_t, Picoseconds now) {
  udp_wire::Ack a;
  if (h.kind != udp_wire::kAck || !udp_wire::parseAck(datagram, size, &a) || !error_.isOk()) return;
  if (a.cumulative > sent_seq_) return;  // acknowledges what was never sent: not from our receiver
  if (a.number > last_ack_number_) {  // acknowledgements may overtake each other: the newest says what is held
    last_ack_number_ = a.number;
    peer_held_ = a.held_bytes;
  }
  if (h.flags & udp_wire::kProbeReply) {
    if (h.path < paths_.count() && paths_.onProbeReply(h.path, now)) {
      MSC_LOG_INFO("udp: path %d to %s delivers again: back in the spray (%d of %d up)", static_cast<int>(h.path),
                   setup_.peer.c_str(), paths_.upCount(), paths_.count());
    }
    return;
  }
  if (h.flags & udp_wire::kWindowUpdate) return;
  if (h.flags & udp_wire::kCnp) control_->onCnp(now);
  // The newest acknowledgement taken in: what it could report (its cumulative number and the SACK bitmap's
  // reach) is what it says about packets overtaken on their path (acknowledgements overtake each other too).
  if (a.number > judged_ack_number_) {
    judged_ack_number_ = a.number;
    judge_below_ = a.cumulative + 1 + udp_wire::kSackBits;
  }
  uint64_t acked_bytes = 0;
  uint32_t acked_packets = 0;
  const auto take = [&](uint64_t seq) {
    uint64_t bytes = 0;
    if (acknowledge(seq, now, &bytes)) {
      acked_bytes += bytes;
      ++acked_packets;
    }
  };
  take(h.seq);
  for (uint64_t seq = base_seq_; seq < std::min(a.cumulative, sent_seq_); ++seq) take(seq);
  for (uint64_t i = 0; i < udp_wire::kSackBits; ++i) {
    if ((a.sack >> i) & 1) take(a.cumulative + 1 + i);
  }
  while (!packets_.empty() && packets_.front().acked && base_seq_ < sent_seq_) {
    packets_.pop_front();
    ++base_seq_;
  }
  if (acked_packets == 0) return;
  // The timeout must outlast the whole round trip; the control law reacts to the network's part of it, without
  // the time the receiver sat on the packet (Swift's fabric delay, told apart here by the two ends' kernel
  // receive times instead of NIC timestamps).
  Picoseconds rtt = 0, network_rtt = 0;
  if (h.sent_ns > 0 && h.sent_ns < now / kNanosecond) {  // an echo of our own clock, checked before it is scaled
    rtt = now - h.sent_ns * kNanosecond;
    rto_.onSample(rtt);
    // A delay as long as the whole round trip (or longer) is not the receiver's to claim: the sample stays whole.
    network_rtt = a.delay_ns > 0 && a.delay_ns < rtt / kNanosecond ? rtt - a.delay_ns * kNanosecond : rtt;
  }
  budget_.onProgress();
  rto_.onProgress();
  probed_ = false;
  control_->onAck(congestion::AckEvent{now, network_rtt, acked_bytes, acked_packets, (h.flags & udp_wire::kEcnEcho) != 0});
  bool lost = false;
  for (uint64_t seq : repeat_.overtaken(judge_below_)) {
    const Packet* p = find(seq);
    if (p != nullptr && !p->acked && !p->resend_queued) {
      queueResend(seq);
      lost = true;
      ++losses_from_sacks_;
    }
  }
  if (lost) control_->onLoss(now);
}

void UdpSender::checkTimeouts(Picoseconds now) {
  if (repeat_.outstanding() == 0) return;
  std::vector<uint64_t> expired;
  for (uint64_t seq : repeat_.timedOut(now, rto_.rto())) {
    const Packet* p = find(seq);
    if (p != nullptr && !p->acked && !p->resend_queued) expired.push_back(seq);
  }
  if (expired.empty()) return;
  if (!probed_) {
    probed_ = true;
    ++probes_;
    queueResend(expired.front());
    rto_.onTimeout();  // the verdict waits for twice the timeout
    return;
  }
  for (uint64_t seq : expired) queueResend(seq);
  resends_after_timeout_ += expired.size();
  ++timeouts_;
  rto_.onTimeout();
  control_->onTimeout(now);
  budget_.onTimeout(now);
  if (budget_.exhausted(now)) {
    fail(Status(ErrorCode::kPeerLost,
                "udp: send to " + setup_.peer + ": nothing acknowledged for " +
                    std::to_string((now - budget_.stalledSince()) / kMillisecond) + " ms over any of its " +
                    std::to_string(paths_.count()) + " path(s) (MEGASCALE_UDP_GIVE_UP_MS=" +
                    std::to_string(setup_.give_up_after / kMillisecond) + ")"));
  }
}

void UdpSender::checkPaths(Picoseconds now) {
  for (int path = 0; path < paths_.count(); ++path) {
    if (!paths_.judge(path, now)) continue;
    MSC_LOG_INFO("udp: path %d to %s answered nothing for %lld ms while others did: out of the spray (%d of %d up)",
                 path, setup_.peer.c_str(), static_cast<long long>(paths_.downAfter() / kMillisecond),
                 paths_.upCount(), paths_.count());
    for (uint64_t seq = base_seq_; seq < sent_seq_; ++seq) {
      if (packets_[seq - base_seq_].path == path) queueResend(seq);
    }
  }
}

void UdpSender::sendProbe(int path, Picoseconds now) {
  const udp_wire::Header h{udp_wire::kMagic, udp_wire::kProbe, 0, static_cast<uint16_t>(path),
                           setup_.remote_connection, ++probe_seq_, now / kNanosecond};
  (void)out_.send(paths_.localFlow(path), paths_.remote(path), &h, sizeof(h), nullptr, 0);
}

Picoseconds UdpSender::gapFor(uint32_t wire_bytes) const {
  return std::max(control_->pacingGap(wire_bytes), serializationTime(wire_bytes, setup_.line_bps));
}

Picoseconds UdpSender::step(Picoseconds now) {
  if (!error_.isOk()) return kNever;
  if (control_->nextTimer() <= now) control_->onTimer(now);
  checkTimeouts(now);
  if (!error_.isOk()) return kNever;
  if (now >= next_path_check_) {
    checkPaths(now);
    next_path_check_ = now + std::max(paths_.downAfter() / 4, kMillisecond);
  }
  for (int path : paths_.probesDue(now)) sendProbe(path, now);

  if (paced_wake_ != kNever && now >= paced_wake_) {
    ++paced_wakeups_;
    wake_lateness_total_ += now - paced_wake_;
  }
  paced_wake_ = kNever;
  if (paced_wire_ > 0) {
    next_send_ = congestion::SoftwarePacing::reconsidered(next_send_, paced_from_, gapFor(paced_wire_));
  }
  bool blocked = false, paced = false;
  while (true) {
    while (!resend_.empty()) {
      const Packet* p = find(resend_.front());
      if (p != nullptr && !p->acked && p->resend_queued) break;
      resend_.pop_front();
    }
    if (!congestion::SoftwarePacing::due(next_send_, now)) {
      paced = !resend_.empty() || !queue_.empty() || sent_seq_ < next_seq_;
      break;
    }
    uint64_t seq;
    if (!resend_.empty()) {
      seq = resend_.front();
    } else {
      if (sent_seq_ == next_seq_ && queue_.empty()) break;
      const uint32_t bytes = sent_seq_ < next_seq_ ? find(sent_seq_)->bytes
                             : static_cast<uint32_t>(std::min<uint64_t>(setup_.payload_bytes, queue_.front()->size - cut_offset_));
      if (!windowOpen(bytes)) break;
      if (sent_seq_ == next_seq_) cutNext();
      seq = sent_seq_;
    }
    if (!transmit(seq, now)) {
      blocked = true;
      break;
    }
    if (!resend_.empty() && resend_.front() == seq) resend_.pop_front();
    // IP and UDP headers, and Ethernet's framing (header, FCS, preamble, gap): paced at the line rate on fewer
    // bytes than the wire carries, a flow outruns its own link and keeps a queue standing.
    paced_wire_ = static_cast<uint32_t>(find(seq)->bytes + udp_wire::kDataHeaderBytes + 28 + 38);
    const Picoseconds gap = gapFor(paced_wire_);
    paced_from_ = congestion::SoftwarePacing::from(next_send_, now, gap);
    next_send_ = paced_from_ + gap;
  }

  // The receiver holds so much that nothing may leave, and nothing in flight will bring the ack that says it
  // took it: ask, in case the window update that says so was lost.
  const bool waiting = !queue_.empty() || sent_seq_ < next_seq_;
  if (waiting && in_flight_packets_ == 0 && !windowOpen(static_cast<uint32_t>(setup_.payload_bytes))) {
    if (window_probe_at_ == kNever) {
      window_probe_at_ = now + rto_.rto();
    } else if (now >= window_probe_at_) {
      sendProbe(paths_.next(), now);
      window_probe_at_ = now + rto_.rto();
    }
  } else {
    window_probe_at_ = kNever;
  }

  Picoseconds wake = std::min({control_->nextTimer(), paths_.nextProbe(), window_probe_at_});
  if (repeat_.outstanding() > 0) {
    // A timeout already past belongs to a packet whose resend waits for pacing (woken below), not a timer.
    const Picoseconds timeout = repeat_.nextTimeout(rto_.rto());
    if (timeout > now) wake = std::min(wake, timeout);
    wake = std::min(wake, next_path_check_);
  }
  if (blocked) wake = std::min(wake, now + kBlockedRetry);
  if (paced && next_send_ - congestion::SoftwarePacing::kSlack <= wake) {
    wake = next_send_ - congestion::SoftwarePacing::kSlack;
    paced_wake_ = wake;
  }
  return std::max(wake, now + 1);
}

}  // namespace megascale::transport
