#include "transport/udp/udp_receiver.h"

#include <algorithm>
#include <cstring>

namespace megascale::transport {

namespace {
constexpr uint8_t kCongestionExperienced = 0x03;  // the TOS byte's ECN bits
constexpr uint64_t kMaxMessagesAhead = uint64_t{1} << 20;
}  // namespace

UdpReceiver::UdpReceiver(const UdpReceiverSetup& setup, UdpPaths paths, DatagramOut& out, std::function<void()> notify)
    : setup_(setup), paths_(std::move(paths)), out_(out), notify_(std::move(notify)) {}

void UdpReceiver::fail(Status s) {
  if (error_.isOk()) error_ = std::move(s);
  notify_();
}

void UdpReceiver::post(ReceiveSlot* slot) {
  for (int i = 0; i < slot->posted.n; ++i) positions_.push_back(slot);
  assign();
}

bool UdpReceiver::record(uint64_t seq) {
  if (seq < cumulative_) return false;
  const uint64_t ahead = seq - cumulative_;
  if (ahead < above_.size() && above_[ahead]) return false;
  if (ahead >= above_.size()) above_.resize(ahead + 1, false);
  above_[ahead] = true;
  while (!above_.empty() && above_.front()) {
    above_.pop_front();
    ++cumulative_;
  }
  return true;
}

void UdpReceiver::sendAck(const udp_wire::Header& h, uint8_t flags, Picoseconds held) {
  const int path = h.path % paths_.count();
  udp_wire::Header out{udp_wire::kMagic, udp_wire::kAck, flags, static_cast<uint16_t>(path), setup_.remote_connection,
                       h.seq, h.sent_ns};
  udp_wire::Ack a{cumulative_, 0, held_bytes_, ++acks_sent_, std::max<Picoseconds>(held, 0) / kNanosecond};
  for (size_t i = 1; i < above_.size() && i <= udp_wire::kSackBits; ++i) {
    if (above_[i]) a.sack |= uint64_t{1} << (i - 1);
  }
  uint8_t packet[udp_wire::kAckBytes];
  std::memcpy(packet, &out, sizeof(out));
  std::memcpy(packet + sizeof(out), &a, sizeof(a));
  (void)out_.send(paths_.localFlow(path), paths_.remote(path), packet, sizeof(packet), nullptr, 0);
}

void UdpReceiver::acknowledgeLater(const udp_wire::Header& h, uint8_t flags, Picoseconds arrived) {
  ack_for_ = h;
  ack_for_arrived_ = arrived;
  ack_flags_ |= flags;
  ack_due_ = true;
}

void UdpReceiver::endOfBatch(Picoseconds now) {
  if (!ack_due_) return;
  sendAck(ack_for_, ack_flags_, now - ack_for_arrived_);
  ack_due_ = false;
  ack_flags_ = 0;
}

void UdpReceiver::onPacket(const udp_wire::Header& h, const uint8_t* datagram, size_t size, uint8_t tos,
                           Picoseconds arrived) {
  if (h.kind == udp_wire::kData) return onData(h, datagram, size, tos, arrived);
  if (h.kind == udp_wire::kProbe && size == sizeof(udp_wire::Header)) sendAck(h, udp_wire::kProbeReply, 0);
}

void UdpReceiver::onData(const udp_wire::Header& h, const uint8_t* datagram, size_t size, uint8_t tos,
                         Picoseconds arrived) {
  udp_wire::Data d;
  const bool sane = udp_wire::parseData(datagram, size, &d) &&
                    (h.seq < cumulative_ || h.seq - cumulative_ < setup_.max_ahead_packets) &&
                    (d.message < next_assign_ || d.message - next_assign_ < kMaxMessagesAhead);
  if (!sane) {
    ++malformed_;
    return;
  }
  const bool ce = (tos & kCongestionExperienced) == kCongestionExperienced;
  const uint8_t flags = (ce ? udp_wire::kEcnEcho : 0) | (cnp_.onArrival(arrived, ce) ? udp_wire::kCnp : 0);
  if (!record(h.seq)) {
    ++duplicates_;  // its first acknowledgement may have been lost: acknowledge again
    return acknowledgeLater(h, flags, arrived);
  }
  const bool known = incoming_.count(d.message) > 0;
  if (!known && d.message < next_assign_) {  // a new packet of a message already whole: not ours to trust
    ++malformed_;
    return acknowledgeLater(h, flags, arrived);
  }
  Incoming& in = incoming_[d.message];
  if (!known) {
    in.tag = d.tag;
    in.size = d.size;
  } else if (in.tag != d.tag || in.size != d.size) {
    ++malformed_;
    return acknowledgeLater(h, flags, arrived);
  }
  const uint8_t* payload = datagram + udp_wire::kDataHeaderBytes;
  if (in.slot != nullptr) {
    if (d.bytes > 0) std::memcpy(in.slot->posted.data[in.buffer] + d.offset, payload, d.bytes);
  } else if (d.bytes > 0) {
    in.held[d.offset].assign(payload, payload + d.bytes);
    held_bytes_ += d.bytes;
  }
  in.received += d.bytes;
  acknowledgeLater(h, flags, arrived);
  if (in.slot != nullptr) {
    completeIfWhole(d.message);
  } else {
    assign();
  }
}

void UdpReceiver::assign() {
  bool freed = false;
  while (!positions_.empty() && error_.isOk()) {
    auto it = incoming_.find(next_assign_);
    if (it == incoming_.end()) break;  // its first packet has not arrived: later ones must wait (message order)
    Incoming& in = it->second;
    ReceiveSlot* slot = positions_.front();
    Status s = slot->posted.match(in.tag, in.size, &in.buffer);
    if (!s.isOk()) {
      return fail(Status(s.code(), "udp: receive from " + setup_.peer + ": " + s.message()));
    }
    positions_.pop_front();
    in.slot = slot;
    for (auto& [offset, bytes] : in.held) {
      std::memcpy(slot->posted.data[in.buffer] + offset, bytes.data(), bytes.size());
      held_bytes_ -= bytes.size();
      freed = true;
    }
    in.held.clear();
    completeIfWhole(next_assign_++);
  }
  if (freed) window_update_due_ = true;
}

void UdpReceiver::completeIfWhole(uint64_t number) {
  auto it = incoming_.find(number);
  if (it == incoming_.end() || it->second.slot == nullptr || it->second.received < it->second.size) return;
  // A zero-byte message is whole once its one packet came; any other once all its bytes did.
  ReceiveSlot* slot = it->second.slot;
  slot->posted.sizes[it->second.buffer] = it->second.size;
  incoming_.erase(it);
  if (--slot->posted.messages_left == 0) {
    slot->done = true;
    notify_();
  }
}

Picoseconds UdpReceiver::step(Picoseconds) {
  if (window_update_due_) {
    window_update_due_ = false;
    const udp_wire::Header h{udp_wire::kMagic, udp_wire::kAck, 0, 0, 0, 0, 0};
    sendAck(h, udp_wire::kWindowUpdate, 0);
  }
  return kNever;
}

}  // namespace megascale::transport
