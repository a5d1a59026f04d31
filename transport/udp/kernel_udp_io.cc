#include "transport/udp/kernel_udp_io.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <ctime>

#include "common/status.h"

namespace megascale::transport {

namespace {
constexpr uint32_t kWakeTag = UINT32_MAX;
constexpr int kPassesPerWait = 8;  // at most a batch per socket each: busy flows must not starve the timers
}  // namespace

KernelUdpIo::KernelUdpIo(const UdpIoSetup& setup)
    : send_batch_(setup.send_batch), epoll_(epoll_create1(EPOLL_CLOEXEC)),
      wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!epoll_.valid() || !wake_.valid()) throw Error(ErrorCode::kSystem, "udp: epoll or eventfd: " + errnoText(errno));
  for (const std::string& ipv4 : setup.rails) {
    for (int i = 0; i < setup.flows; ++i) {
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u32 = static_cast<uint32_t>(sockets_.size());
      sockets_.push_back(std::make_unique<UdpSocket>(ipv4, setup.traffic_class));
      endpoints_.push_back(sockets_.back()->endpoint());
      batches_.emplace_back(send_batch_);
      socket_full_.push_back(0);
      epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, sockets_.back()->fd(), &e);
    }
  }
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u32 = kWakeTag;
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &e);
  arrived_.reserve(ReceiveBatch::kDatagrams);
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
  const int lost = batches_[flow].flush(*sockets_[flow]);
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
  epoll_event events[64];
  timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  const int n = epoll_pwait2(epoll_.get(), events, 64, &timeout, nullptr);
  readable_.clear();
  cursor_ = 0;
  passes_ = 0;
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u32 == kWakeTag) {
      uint64_t count;
      (void)!read(wake_.get(), &count, sizeof(count));
    } else {
      readable_.push_back(events[i].data.u32);
    }
  }
}

std::span<const ArrivedDatagram> KernelUdpIo::receive(bool* pass_ended) {
  *pass_ended = false;
  while (!readable_.empty() && passes_ < kPassesPerWait) {
    if (cursor_ >= readable_.size()) cursor_ = 0;
    const int n = sockets_[readable_[cursor_]]->receive(batch_);
    if (n < ReceiveBatch::kDatagrams) {
      readable_.erase(readable_.begin() + static_cast<std::ptrdiff_t>(cursor_));  // drained
    } else {
      ++cursor_;
    }
    if (cursor_ >= readable_.size()) {
      ++passes_;
      *pass_ended = true;
    }
    if (n == 0) continue;
    timespec realtime{};
    clock_gettime(CLOCK_REALTIME, &realtime);
    const int64_t realtime_ns = static_cast<int64_t>(realtime.tv_sec) * 1'000'000'000 + realtime.tv_nsec;
    arrived_.clear();
    for (int i = 0; i < n; ++i) {
      // A missing or implausible kernel time (a clock step) counts as just arrived.
      const int64_t stamp = batch_.arrivedRealtimeNs(i);
      const int64_t waited = stamp > 0 ? realtime_ns - stamp : 0;
      arrived_.push_back({batch_.data(i), batch_.size(i), batch_.tos(i), waited > 0 && waited < 1'000'000'000 ? waited : 0});
    }
    return arrived_;
  }
  return {};
}

void KernelUdpIo::wake() { signalEventFd(wake_.get()); }

}  // namespace megascale::transport
