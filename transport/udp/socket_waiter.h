// What an io's engine sleeps on: an epoll set of its sockets and an eventfd that wakes it. wait() lists the
// sockets that became readable (by the index each was added with) and swallows a wake.
#pragma once

#include <cstdint>
#include <vector>

#include "common/socket.h"

namespace megascale::transport {

class SocketWaiter {
 public:
  /// Throws Error when epoll or the eventfd cannot be made.
  SocketWaiter();
  /// Watches `fd`; wait() reports it as `index`.
  void add(int fd, uint32_t index);
  /// Sleeps up to `timeout_ns` until a socket is readable or wake() was called; appends the readable sockets'
  /// indices to `readable` and returns whether anything happened.
  bool wait(int64_t timeout_ns, std::vector<uint32_t>* readable);
  /// Makes wait() return now (from any thread).
  void wake();

 private:
  Fd epoll_, wake_;
};

}  // namespace megascale::transport
