#include "transport/tcp/tcp_dial.h"

#include <sys/socket.h>

namespace megascale::transport {

TcpDial::TcpDial(const TransportOptions& options, const sockaddr_in& addr, const tcp_wire::HelloInfo& hello)
    : addr_(addr),
      traffic_class_(options.traffic_class),
      dead_peer_timeout_ms_(options.tcp.dead_peer_timeout_ms),
      auth_(AuthSession::Role::kClient, options.secret, tcp_wire::encodeHello(hello)) {}

Status TcpDial::poll(bool* done) {
  *done = authenticated_;
  if (authenticated_) return Status::ok();
  if (!fd_.valid()) {
    fd_ = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd_.valid()) return Status(ErrorCode::kSystem, "socket() failed: " + errnoText(errno));
    setNoDelay(fd_.get());
    setTrafficClass(fd_.get(), traffic_class_);
    setDeadPeerTimeout(fd_.get(), dead_peer_timeout_ms_);
    if (::connect(fd_.get(), reinterpret_cast<const sockaddr*>(&addr_), sizeof(addr_)) == 0) {
      connected_ = true;
    } else if (errno != EINPROGRESS) {
      return Status(ErrorCode::kPeerLost, "connect failed: " + errnoText(errno));
    }
  }
  if (!connected_) {
    pollfd p{fd_.get(), POLLOUT, 0};
    if (::poll(&p, 1, 0) <= 0) return Status::ok();
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return Status(ErrorCode::kPeerLost, "connect failed: " + errnoText(err));
    connected_ = true;
  }
  MSC_RETURN_IF_ERROR(auth_.progress(fd_.get(), &authenticated_));
  *done = authenticated_;
  return Status::ok();
}

bool TcpDial::appendReadiness(std::vector<pollfd>& fds) const {
  if (authenticated_) return true;
  if (!fd_.valid()) return false;
  fds.push_back(pollfd{fd_.get(), connected_ ? auth_.wantedEvents() : short(POLLOUT), 0});
  return true;
}

}  // namespace megascale::transport
