#include "transport/tcp/tcp_transport.h"

#include <poll.h>
#include <sys/socket.h>

#include <deque>
#include <unordered_map>

#include "common/auth.h"
#include "common/log.h"
#include "transport/tcp/tcp_comm.h"
#include "transport/tcp/tcp_wire.h"

namespace megascale::transport {

namespace {

constexpr char kAddressPrefix[] = "tcp:";

std::string describe(const sockaddr_in& addr, uint64_t id) {
  return "peer " + std::to_string(id) + " (" + formatAddress(addr) + ")";
}

class TcpListener : public Listener {
 public:
  TcpListener(const TransportOptions& options) : options_(options) {
    sockaddr_in bound{};
    std::string host = options.bind_address.empty() ? "127.0.0.1" : options.bind_address;
    fd_ = listenTcp(host, 0, 1024, &bound);
    setNonBlocking(fd_.get());
    address_ = Address::fromString(kAddressPrefix + formatAddress(bound));
  }

  const Address& address() const override { return address_; }

  Status accept(std::unique_ptr<RecvComm>* comm) override {
    acceptNew();
    progressHandshakes();
    if (!ready_.empty()) {
      *comm = std::move(ready_.front());
      ready_.pop_front();
    }
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override {
    fds.push_back(pollfd{fd_.get(), POLLIN, 0});
    for (const auto& p : pending_) fds.push_back(pollfd{p->fd.get(), p->auth.wantedEvents(), 0});
    return true;
  }

 private:
  struct Pending {
    Fd fd;
    sockaddr_in from;
    AuthSession auth;
    Deadline deadline;
  };
  struct Group {
    std::vector<Fd> sockets;
    int arrived = 0;
    uint64_t local_id = 0;
    sockaddr_in from;
  };

  void acceptNew() {
    while (true) {
      sockaddr_in from{};
      socklen_t len = sizeof(from);
      int fd = ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN, or a transient error the next call retries
      setNoDelay(fd);
      setTrafficClass(fd, options_.traffic_class);
      setDeadPeerTimeout(fd, options_.dead_peer_timeout_ms);
      pending_.push_back(std::make_unique<Pending>(Pending{Fd(fd), from,
                                                           AuthSession(AuthSession::Role::kServer, options_.secret),
                                                           deadlineAfter(std::chrono::milliseconds(options_.handshake_timeout_ms))}));
    }
  }

  void progressHandshakes() {
    for (size_t i = 0; i < pending_.size();) {
      Pending& p = *pending_[i];
      bool done = false;
      Status s = p.auth.progress(p.fd.get(), &done);
      bool expired = !done && Clock::now() > p.deadline;
      if (!s.isOk() || expired) {
        MSC_LOG_WARN("tcp transport: refused a connection from %s: %s", formatAddress(p.from).c_str(),
                     s.isOk() ? "handshake timed out" : s.message().c_str());
        pending_.erase(pending_.begin() + static_cast<long>(i));
        continue;
      }
      if (!done) {
        ++i;
        continue;
      }
      tcp_wire::HelloInfo hello = tcp_wire::decodeHello(p.auth.peerHello());
      Group& g = groups_[hello.token];
      if (hello.sockets == 0 || hello.sockets > 64 || hello.socket_index >= hello.sockets ||
          (!g.sockets.empty() && g.sockets.size() != hello.sockets)) {
        MSC_LOG_WARN("tcp transport: inconsistent hello from %s; dropped", formatAddress(p.from).c_str());
        groups_.erase(hello.token);
        pending_.erase(pending_.begin() + static_cast<long>(i));
        continue;
      }
      if (g.sockets.empty()) g.sockets.resize(hello.sockets);
      // Acknowledgements travel in the class of the data they acknowledge (listeners are shared by groups of
      // different classes).
      if (hello.traffic_class >= 0) setTrafficClass(p.fd.get(), hello.traffic_class);
      g.sockets[hello.socket_index] = std::move(p.fd);
      g.local_id = hello.local_id;
      g.from = p.from;
      if (++g.arrived == hello.sockets) {
        ready_.push_back(std::make_unique<TcpRecvComm>(std::move(g.sockets), options_.stripe_min_bytes, g.local_id,
                                                       describe(g.from, g.local_id)));
        groups_.erase(hello.token);
      }
      pending_.erase(pending_.begin() + static_cast<long>(i));
    }
  }

  TransportOptions options_;
  Fd fd_;
  Address address_;
  std::vector<std::unique_ptr<Pending>> pending_;
  std::unordered_map<uint64_t, Group> groups_;  // by connection token, until every socket has arrived
  std::deque<std::unique_ptr<RecvComm>> ready_;
};

class TcpConnector : public Connector {
 public:
  TcpConnector(const TransportOptions& options, const sockaddr_in& addr, uint64_t local_id)
      : options_(options), addr_(addr), local_id_(local_id),
        deadline_(deadlineAfter(std::chrono::milliseconds(options.handshake_timeout_ms))) {
    uint64_t token;
    randomBytes(&token, sizeof(token));
    int n = std::max(1, options.sockets_per_comm);
    for (int i = 0; i < n; ++i) {
      tcp_wire::HelloInfo hello{local_id, token, static_cast<uint16_t>(i), static_cast<uint16_t>(n), options.traffic_class};
      sockets_.push_back(Socket{Fd(), false, false,
                                AuthSession(AuthSession::Role::kClient, options.secret, tcp_wire::encodeHello(hello))});
    }
  }

  Status poll(std::unique_ptr<SendComm>* comm) override {
    bool all_done = true;
    for (Socket& s : sockets_) {
      Status st = progress(s);
      if (!st.isOk()) return Status(st.code(), "tcp connect to " + formatAddress(addr_) + ": " + st.message());
      all_done = all_done && s.authenticated;
    }
    if (all_done) {
      std::vector<Fd> fds;
      for (Socket& s : sockets_) fds.push_back(std::move(s.fd));
      *comm = std::make_unique<TcpSendComm>(std::move(fds), options_.stripe_min_bytes, formatAddress(addr_));
      return Status::ok();
    }
    if (Clock::now() > deadline_) {
      return Status(ErrorCode::kTimeout, "tcp connect to " + formatAddress(addr_) + ": timed out after " +
                                             std::to_string(options_.handshake_timeout_ms) + " ms");
    }
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override {
    for (const Socket& s : sockets_) {
      if (s.authenticated) continue;
      if (!s.fd.valid()) return false;  // not even started: poll() starts it at once
      fds.push_back(pollfd{s.fd.get(), s.connected ? s.auth.wantedEvents() : short(POLLOUT), 0});
    }
    return true;
  }

 private:
  struct Socket {
    Fd fd;
    bool connected;
    bool authenticated;
    AuthSession auth;
  };

  Status progress(Socket& s) {
    if (s.authenticated) return Status::ok();
    if (!s.fd.valid()) {
      s.fd = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!s.fd.valid()) return Status(ErrorCode::kSystem, "socket() failed: " + errnoText(errno));
      setNoDelay(s.fd.get());
      setTrafficClass(s.fd.get(), options_.traffic_class);
      setDeadPeerTimeout(s.fd.get(), options_.dead_peer_timeout_ms);
      if (::connect(s.fd.get(), reinterpret_cast<const sockaddr*>(&addr_), sizeof(addr_)) == 0) {
        s.connected = true;
      } else if (errno != EINPROGRESS) {
        return Status(ErrorCode::kPeerLost, "connect failed: " + errnoText(errno));
      }
    }
    if (!s.connected) {
      pollfd p{s.fd.get(), POLLOUT, 0};
      if (::poll(&p, 1, 0) <= 0) return Status::ok();
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(s.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return Status(ErrorCode::kPeerLost, "connect failed: " + errnoText(err));
      s.connected = true;
    }
    bool done = false;
    MSC_RETURN_IF_ERROR(s.auth.progress(s.fd.get(), &done));
    s.authenticated = done;
    return Status::ok();
  }

  TransportOptions options_;
  sockaddr_in addr_;
  uint64_t local_id_;
  Deadline deadline_;
  std::vector<Socket> sockets_;
};

}  // namespace

TcpTransport::TcpTransport(const TransportOptions& options) : options_(options) {
  properties_.name = "tcp";
  properties_.speed_gbps = 10;
  properties_.latency_us = 20;
  properties_.max_recvs = kMaxRecvs;
}

std::unique_ptr<Listener> TcpTransport::listen() { return std::make_unique<TcpListener>(options_); }

std::unique_ptr<Connector> TcpTransport::connect(const Address& address, uint64_t local_id) {
  std::string text = address.asString();
  if (text.rfind(kAddressPrefix, 0) != 0) {
    throw Error(ErrorCode::kInvalidArgument, "tcp connect: '" + text + "' is not a tcp transport address");
  }
  return std::make_unique<TcpConnector>(options_, parseHostPort(text.substr(sizeof(kAddressPrefix) - 1)), local_id);
}

}  // namespace megascale::transport
