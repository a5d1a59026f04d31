#include "transport/udp/socket_waiter.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <ctime>

#include "common/status.h"

namespace megascale::transport {

namespace {
constexpr uint32_t kWakeTag = UINT32_MAX;
constexpr int kEvents = 64;
}  // namespace

SocketWaiter::SocketWaiter()
    : epoll_(epoll_create1(EPOLL_CLOEXEC)), wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!epoll_.valid() || !wake_.valid()) throw Error(ErrorCode::kSystem, "udp: epoll or eventfd: " + errnoText(errno));
  add(wake_.get(), kWakeTag);
}

void SocketWaiter::add(int fd, uint32_t index) {
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u32 = index;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &e) != 0) {
    throw Error(ErrorCode::kSystem, "udp: epoll_ctl: " + errnoText(errno));
  }
}

bool SocketWaiter::wait(int64_t timeout_ns, std::vector<uint32_t>* readable) {
  epoll_event events[kEvents];
  timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000), static_cast<long>(timeout_ns % 1'000'000'000)};
  const int n = epoll_pwait2(epoll_.get(), events, kEvents, &timeout, nullptr);
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u32 == kWakeTag) {
      uint64_t count;
      (void)!read(wake_.get(), &count, sizeof(count));
    } else {
      readable->push_back(events[i].data.u32);
    }
  }
  return n > 0;
}

void SocketWaiter::wake() { signalEventFd(wake_.get()); }

}  // namespace megascale::transport
