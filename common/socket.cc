#include "common/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <thread>

namespace megascale {

int msUntil(Deadline deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return left > INT_MAX ? INT_MAX : static_cast<int>(left);
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

sockaddr_in makeAddress(const std::string& host, int port) {
  if (port < 0 || port > 65535) {
    throw Error(ErrorCode::kInvalidArgument, "address " + host + ":" + std::to_string(port) + ": port out of range");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (host.empty() || host == "*" || host == "0.0.0.0") {
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    return addr;
  }
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1) return addr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0 || result == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "cannot resolve host '" + host + "': " + gai_strerror(rc));
  }
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(result->ai_addr)->sin_addr;
  freeaddrinfo(result);
  return addr;
}

sockaddr_in parseHostPort(const std::string& host_port) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos || colon + 1 == host_port.size()) {
    throw Error(ErrorCode::kInvalidArgument, "address '" + host_port + "' is not host:port");
  }
  std::string port_text = host_port.substr(colon + 1);
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) {
    throw Error(ErrorCode::kInvalidArgument, "address '" + host_port + "': bad port '" + port_text + "'");
  }
  return makeAddress(host_port.substr(0, colon), static_cast<int>(port));
}

std::string formatAddress(const sockaddr_in& addr) {
  char text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(ntohs(addr.sin_port));
}

std::string describePeer(const sockaddr_in& addr, uint64_t id) {
  return "peer " + std::to_string(id) + " (" + formatAddress(addr) + ")";
}

void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    throw Error(ErrorCode::kSystem, "fcntl(O_NONBLOCK) failed: " + errnoText(errno));
  }
}

void signalEventFd(int fd) {
  const uint64_t one = 1;
  ssize_t ignored = ::write(fd, &one, sizeof(one));
  (void)ignored;  // a full counter (2^64 - 2) still reads as readable
}

void drainEventFd(int fd) {
  uint64_t count;
  ssize_t ignored = ::read(fd, &count, sizeof(count));
  (void)ignored;  // EAGAIN: nothing was pending
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void setTrafficClass(int fd, int traffic_class) {
  if (traffic_class < 0) return;
  int tos = traffic_class & 0xff;
  setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
}

void setDeadPeerTimeout(int fd, int timeout_ms) {
  if (timeout_ms <= 0) return;
  int one = 1, user_timeout = timeout_ms;
  int idle = std::max(1, timeout_ms / 3000), interval = std::max(1, timeout_ms / 6000), probes = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout));
}

Fd listenTcp(const std::string& host, int port, int backlog, sockaddr_in* bound) {
  sockaddr_in addr = makeAddress(host, port);
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw Error(ErrorCode::kSystem, "socket() failed: " + errnoText(errno));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    throw Error(ErrorCode::kSystem, "bind(" + formatAddress(addr) + ") failed: " + errnoText(errno));
  }
  if (::listen(fd.get(), backlog) != 0) {
    throw Error(ErrorCode::kSystem, "listen(" + formatAddress(addr) + ") failed: " + errnoText(errno));
  }
  if (bound != nullptr) {
    socklen_t len = sizeof(*bound);
    getsockname(fd.get(), reinterpret_cast<sockaddr*>(bound), &len);
  }
  return fd;
}

Fd connectTcp(const sockaddr_in& addr, Deadline deadline, const std::string& what) {
  int last_errno = 0;
  bool gave_up_at_deadline = false;
  auto backoff = std::chrono::milliseconds(1);
  while (true) {
    Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) throw Error(ErrorCode::kSystem, what + ": socket() failed: " + errnoText(errno));
    int rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      int ready = ::poll(&p, 1, msUntil(deadline));
      if (ready > 0) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        rc = -1;
        errno = ready == 0 ? ETIMEDOUT : errno;
      }
    }
    if (rc == 0) {
      int flags = fcntl(fd.get(), F_GETFL, 0);
      fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
      setNoDelay(fd.get());
      return fd;
    }
    last_errno = errno;
    bool retryable = last_errno == ECONNREFUSED || last_errno == ETIMEDOUT || last_errno == ECONNRESET ||
                     last_errno == EAGAIN || last_errno == ENETUNREACH || last_errno == EHOSTUNREACH;
    if (!retryable) break;
    if (Clock::now() + backoff >= deadline) {
      gave_up_at_deadline = true;
      break;
    }
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  }
  ErrorCode code = gave_up_at_deadline ? ErrorCode::kTimeout : ErrorCode::kSystem;
  throw Error(code, what + ": connect to " + formatAddress(addr) + " failed: " + errnoText(last_errno) +
                        (code == ErrorCode::kTimeout ? " (gave up at the deadline; raise MEGASCALE_TIMEOUT_MS?)" : ""));
}

Status socketError(const char* call, int err) {
  bool peer = err == EPIPE || err == ECONNRESET || err == ECONNABORTED || err == ETIMEDOUT;
  return Status(peer ? ErrorCode::kPeerLost : ErrorCode::kSystem, std::string(call) + " failed: " + errnoText(err));
}

Status sendSomeOfTwo(int fd, const void* head, size_t head_size, const void* body, size_t body_size, uint64_t* done) {
  while (*done < head_size + body_size) {
    iovec iov[2];
    int count = 0;
    if (*done < head_size) iov[count++] = {static_cast<char*>(const_cast<void*>(head)) + *done, head_size - *done};
    size_t body_done = *done > head_size ? *done - head_size : 0;
    if (body_size > body_done) {
      iov[count++] = {static_cast<char*>(const_cast<void*>(body)) + body_done, body_size - body_done};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      *done += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::ok();
    return socketError("send", errno);
  }
  return Status::ok();
}

Status sendSome(int fd, const void* data, size_t size, size_t* done) {
  uint64_t moved = *done;
  Status s = sendSomeOfTwo(fd, nullptr, 0, data, size, &moved);
  *done = static_cast<size_t>(moved);
  return s;
}

Status recvSome(int fd, void* data, size_t size, size_t* done) {
  while (*done < size) {
    ssize_t n = ::recv(fd, static_cast<char*>(data) + *done, size - *done, MSG_DONTWAIT);
    if (n > 0) {
      *done += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return Status(ErrorCode::kPeerLost, "connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
    return socketError("recv", errno);
  }
  return Status::ok();
}

namespace {

Status moveAll(int fd, void* data, size_t size, Deadline deadline, const char* what, bool sending) {
  size_t done = 0;
  while (true) {
    Status s = sending ? sendSome(fd, data, size, &done) : recvSome(fd, data, size, &done);
    if (!s.isOk()) return Status(s.code(), std::string(what) + ": " + s.message());
    if (done == size) return Status::ok();
    pollfd p{fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
    int ready = ::poll(&p, 1, msUntil(deadline));
    if (ready == 0) {
      return Status(ErrorCode::kTimeout, std::string(what) + ": timed out after " + std::to_string(done) + " of " +
                                             std::to_string(size) + " bytes");
    }
    if (ready < 0 && errno != EINTR) return Status(ErrorCode::kSystem, std::string(what) + ": poll failed: " + errnoText(errno));
  }
}

}  // namespace

Status sendAll(int fd, const void* data, size_t size, Deadline deadline, const char* what) {
  return moveAll(fd, const_cast<void*>(data), size, deadline, what, true);
}

Status recvAll(int fd, void* data, size_t size, Deadline deadline, const char* what) {
  return moveAll(fd, data, size, deadline, what, false);
}

}  // namespace megascale
