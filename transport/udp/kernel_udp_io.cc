#include "transport/udp/kernel_udp_io.h"

#include "common/log.h"
#include "common/status.h"

namespace megascale::transport {

namespace {
constexpr int kPassesPerWait = 8;  // at most a batch per socket each: busy flows must not starve the timers
}  // namespace

KernelUdpIo::KernelUdpIo(const UdpIoSetup& setup) : send_batch_(setup.send_batch) {
  for (const std::string& ipv4 : setup.rails) {
    for (int i = 0; i < setup.flows; ++i) {
      sockets_.push_back(std::make_unique<UdpSocket>(ipv4, setup.traffic_class));
      if (setup.gso) sockets_.back()->acceptCoalesced();  // a kernel without UDP_GRO hands datagrams over singly
      waiter_.add(sockets_.back()->fd(), static_cast<uint32_t>(sockets_.size() - 1));
      endpoints_.push_back(sockets_.back()->endpoint());
      batches_.emplace_back(send_batch_, setup.gso);
      socket_full_.push_back(0);
    }
  }
}

bool KernelUdpIo::send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                       size_t payload_bytes) {
  const auto i = static_cast<size_t>(flow);
  if (send_batch_ <= 1) return sockets_[i]->send(to, head, head_bytes, payload, payload_bytes);
  if (socket_full_[i]) return false;
  if (batches_[i].full()) flush(i);
  if (socket_full_[i]) return false;
  batches_[i].add(to, head, head_bytes, payload, payload_bytes);
  return true;
}

void KernelUdpIo::flush(size_t flow) {
  const bool gso = batches_[flow].gso();
  const int lost = batches_[flow].flush(*sockets_[flow]);
  if (gso && !batches_[flow].gso()) {
    MSC_LOG_INFO("udp: the kernel does not segment datagrams leaving port %u (%s): that flow sends them one by one",
                 ntohs(endpoints_[flow].port), batches_[flow].gsoRefusal().c_str());
  }
  if (lost > 0) {
    lost_sends_ += static_cast<uint64_t>(lost);
    socket_full_[flow] = 1;
  }
}

void KernelUdpIo::endRound() {
  for (size_t i = 0; i < batches_.size(); ++i) {
    if (!batches_[i].empty()) flush(i);
    socket_full_[i] = 0;
  }
}

void KernelUdpIo::wait(int64_t timeout_ns) {
  readable_.clear();
  cursor_ = 0;
  passes_ = 0;
  waiter_.wait(timeout_ns, &readable_);
}

std::span<const ArrivedDatagram> KernelUdpIo::receive(bool* pass_ended) {
  *pass_ended = false;
  while (!readable_.empty() && passes_ < kPassesPerWait) {
    if (cursor_ >= readable_.size()) cursor_ = 0;
    const int n = sockets_[readable_[cursor_]]->receive(batch_);
    if (!batch_.mayHoldMore()) {
      readable_.erase(readable_.begin() + static_cast<std::ptrdiff_t>(cursor_));  // drained
    } else {
      ++cursor_;
    }
    if (cursor_ >= readable_.size()) {
      ++passes_;
      *pass_ended = true;
    }
    if (n == 0) continue;
    const int64_t realtime_ns = realtimeNowNs();
    arrived_.clear();
    for (int i = 0; i < n; ++i) {
      arrived_.push_back({batch_.data(i), batch_.size(i), batch_.tos(i), waitedSinceStamp(realtime_ns, batch_.arrivedRealtimeNs(i))});
    }
    return arrived_;
  }
  return {};
}

void KernelUdpIo::wake() { waiter_.wake(); }

}  // namespace megascale::transport
