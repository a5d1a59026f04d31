// Thin, errno-preserving helpers over BSD sockets: RAII descriptors, IPv4 addresses, deadlines, and
// all-or-nothing reads and writes that give up at a deadline instead of hanging.
#pragma once

#include <netinet/in.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "common/status.h"

namespace megascale {

using Clock = std::chrono::steady_clock;
using Deadline = Clock::time_point;

inline Deadline deadlineAfter(std::chrono::milliseconds ms) { return Clock::now() + ms; }
/// Milliseconds left until the deadline, clamped to [0, INT_MAX]; for poll().
int msUntil(Deadline deadline);

/// Owns a file descriptor; closes it on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// "host:port" with an IPv4 address or a resolvable name. Throws Error(kInvalidArgument) on bad text.
sockaddr_in parseHostPort(const std::string& host_port);
sockaddr_in makeAddress(const std::string& host, int port);
std::string formatAddress(const sockaddr_in& addr);
/// "peer ID (host:port)": how errors name a connecting peer.
std::string describePeer(const sockaddr_in& addr, uint64_t id);

void setNonBlocking(int fd);
void setNoDelay(int fd);
/// Adds one to an eventfd's counter, waking whoever polls it. Async-signal-safe.
void signalEventFd(int fd);
/// Resets an eventfd's counter once it has woken a poll.
void drainEventFd(int fd);
/// IP_TOS for traffic-class-aware switches (DSCP in the top six bits); negative values leave the default.
void setTrafficClass(int fd, int traffic_class);
/// A peer that acknowledges nothing for `timeout_ms` (a dead host, a cut link) fails the socket with ETIMEDOUT
/// instead of after the kernel's ~15 minutes of retransmits, also while idle (keepalive probes after a third of
/// the timeout). 0 or less leaves the system defaults.
void setDeadPeerTimeout(int fd, int timeout_ms);

/// A listening, non-blocking TCP socket on host:port (port 0 picks one). Throws Error naming the address.
Fd listenTcp(const std::string& host, int port, int backlog, sockaddr_in* bound);

/// Connects with a deadline, retrying refused connections until it (a server may not be up yet).
/// The socket returned is blocking unless set otherwise. Throws Error(kTimeout/kSystem) naming the address.
Fd connectTcp(const sockaddr_in& addr, Deadline deadline, const std::string& what);

/// Writes or reads exactly size bytes on a (blocking or non-blocking) socket, or fails at the deadline,
/// on EOF (kPeerLost) or on an error. `what` names the operation and peer for the message.
Status sendAll(int fd, const void* data, size_t size, Deadline deadline, const char* what);
Status recvAll(int fd, void* data, size_t size, Deadline deadline, const char* what);

/// The Status for a failed send()/recv() errno: kPeerLost when the peer reset or closed, else kSystem.
Status socketError(const char* call, int err);

/// One non-blocking step: moves as many bytes as the socket takes now. Advances *done. Returns an error on
/// EOF or failure; never blocks.
Status sendSome(int fd, const void* data, size_t size, size_t* done);
/// sendSome over two pieces (a header and a body) with one sendmsg; *done counts across both.
Status sendSomeOfTwo(int fd, const void* head, size_t head_size, const void* body, size_t body_size, uint64_t* done);
Status recvSome(int fd, void* data, size_t size, size_t* done);

}  // namespace megascale
