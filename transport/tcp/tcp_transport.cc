#include "transport/tcp/tcp_transport.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>

#include "common/auth.h"
#include "common/log.h"
#include "transport/tcp/tcp_comm.h"
#include "transport/tcp/tcp_wire.h"

namespace megascale::transport {

namespace {

constexpr char kAddressPrefix[] = "tcp:";

class TcpListener : public Listener {
 public:
  TcpListener(const TransportOptions& options) : options_(options) {
    sockaddr_in bound{};
    std::string host = options.bind_address.empty() ? "127.0.0.1" : options.bind_address;
    fd_ = listenTcp(host, 0, 1024, &bound);
    // Accepted sockets inherit these from the listening one (Linux clones the socket): three to seven calls
    // fewer per connection, and a rank's first connection is a good part of a job's start.
    setNoDelay(fd_.get());
    setTrafficClass(fd_.get(), options_.traffic_class);
    setDeadPeerTimeout(fd_.get(), options_.tcp.dead_peer_timeout_ms);
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

  Status acceptReady(std::vector<std::unique_ptr<RecvComm>>* comms) override {
    acceptNew();
    progressHandshakes();
    for (auto& comm : ready_) comms->push_back(std::move(comm));
    ready_.clear();
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
      // Acknowledgements travel in the class of the data they acknowledge (listeners are shared by groups of
      // different classes).
      if (hello.traffic_class >= 0) setTrafficClass(p.fd.get(), hello.traffic_class);
      if (hello.sockets == 0 || hello.sockets > tcp_wire::kMaxSockets || hello.socket_index >= hello.sockets) {
        drop(p, "an inconsistent hello");
      } else if (hello.flags & tcp_wire::kJoin) {
        join(hello, p);
      } else if (hello.flags & tcp_wire::kLazy) {
        startLazy(hello, p);
      } else {
        gather(hello, p);
      }
      pending_.erase(pending_.begin() + static_cast<long>(i));
    }
  }

  void drop(const Pending& p, const char* what) {
    MSC_LOG_WARN("tcp transport: %s from %s; dropped", what, formatAddress(p.from).c_str());
  }

  // Every socket at once: the comm is ready when the last has arrived.
  void gather(const tcp_wire::HelloInfo& hello, Pending& p) {
    Group& g = groups_[hello.token];
    if (!g.sockets.empty() && g.sockets.size() != hello.sockets) {
      drop(p, "an inconsistent hello");
      groups_.erase(hello.token);
      return;
    }
    if (g.sockets.empty()) g.sockets.resize(hello.sockets);
    g.sockets[hello.socket_index] = std::move(p.fd);
    g.local_id = hello.local_id;
    g.from = p.from;
    if (++g.arrived == hello.sockets) {
      ready_.push_back(
          std::make_unique<TcpRecvComm>(std::move(g.sockets), g.local_id, describePeer(g.from, g.local_id)));
      groups_.erase(hello.token);
    }
  }

  // Socket 0 of a lazily striped comm: ready at once; the others join it later through its inbox.
  void startLazy(const tcp_wire::HelloInfo& hello, Pending& p) {
    if (hello.socket_index != 0) return drop(p, "an inconsistent hello");
    std::vector<Fd> sockets(hello.sockets);
    sockets[0] = std::move(p.fd);
    std::shared_ptr<JoinInbox> inbox;
    if (hello.sockets > 1) {
      inbox = std::make_shared<JoinInbox>();
      forgetDeparted();
      joins_[hello.token] = inbox;
    }
    ready_.push_back(std::make_unique<TcpRecvComm>(std::move(sockets), hello.local_id,
                                                   describePeer(p.from, hello.local_id), std::move(inbox)));
  }

  void join(const tcp_wire::HelloInfo& hello, Pending& p) {
    auto it = joins_.find(hello.token);
    std::shared_ptr<JoinInbox> inbox = it == joins_.end() ? nullptr : it->second.lock();
    if (!inbox || hello.socket_index == 0) return drop(p, "a stripe of no connection this listener holds");
    std::lock_guard<std::mutex> lock(inbox->mutex);
    inbox->arrived.emplace_back(hello.socket_index, std::move(p.fd));
    inbox->any.store(true, std::memory_order_release);
  }

  // Drops the inboxes of comms gone or complete, each time the table doubles: amortized O(1) a connection.
  void forgetDeparted() {
    if (joins_.size() < forget_at_) return;
    for (auto it = joins_.begin(); it != joins_.end();) it = it->second.expired() ? joins_.erase(it) : std::next(it);
    forget_at_ = std::max<size_t>(64, 2 * joins_.size());
  }

  TransportOptions options_;
  Fd fd_;
  Address address_;
  std::vector<std::unique_ptr<Pending>> pending_;
  std::unordered_map<uint64_t, Group> groups_;  // by connection token, until every socket has arrived
  std::unordered_map<uint64_t, std::weak_ptr<JoinInbox>> joins_;  // lazily striped comms, by connection token
  size_t forget_at_ = 64;
  std::deque<std::unique_ptr<RecvComm>> ready_;
};

class TcpConnector : public Connector {
 public:
  TcpConnector(const TransportOptions& options, const sockaddr_in& addr, uint64_t local_id)
      : options_(options), addr_(addr), local_id_(local_id),
        deadline_(deadlineAfter(std::chrono::milliseconds(options.handshake_timeout_ms))) {
    randomBytes(&token_, sizeof(token_));
    sockets_ = std::clamp(options.tcp.sockets_per_comm, 1, tcp_wire::kMaxSockets);
    lazy_ = options.tcp.lazy_stripes && sockets_ > 1;
    const int now = lazy_ ? 1 : sockets_;
    for (int i = 0; i < now; ++i) {
      tcp_wire::HelloInfo hello{local_id, token_, static_cast<uint16_t>(i), static_cast<uint16_t>(sockets_),
                                options.traffic_class, static_cast<uint16_t>(lazy_ ? tcp_wire::kLazy : 0)};
      dials_.emplace_back(options_, addr_, hello);
    }
  }

  Status poll(std::unique_ptr<SendComm>* comm) override {
    bool all_done = true;
    for (size_t i = 0; i < dials_.size(); ++i) {
      bool done = false;
      Status st = dials_[i].poll(&done);
      if (!st.isOk()) return Status(st.code(), "tcp connect to " + formatAddress(addr_) + ": " + st.message());
      all_done = all_done && done;
    }
    if (all_done) {
      std::vector<Fd> fds;
      for (TcpDial& d : dials_) fds.push_back(d.release());
      std::optional<TcpSendComm::LaterStripes> later;
      if (lazy_) later = TcpSendComm::LaterStripes{options_, addr_, local_id_, token_, sockets_};
      *comm = std::make_unique<TcpSendComm>(std::move(fds), options_.tcp.stripe_min_bytes, formatAddress(addr_), std::move(later));
      return Status::ok();
    }
    if (Clock::now() > deadline_) {
      return Status(ErrorCode::kTimeout, "tcp connect to " + formatAddress(addr_) + ": timed out after " +
                                             std::to_string(options_.handshake_timeout_ms) + " ms");
    }
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override {
    for (const TcpDial& d : dials_) {
      if (!d.appendReadiness(fds)) return false;  // not even started: poll() starts it at once
    }
    return true;
  }

 private:
  TransportOptions options_;
  sockaddr_in addr_;
  uint64_t local_id_;
  uint64_t token_;
  int sockets_;
  bool lazy_;
  Deadline deadline_;
  std::vector<TcpDial> dials_;
};

}  // namespace

TcpTransport::TcpTransport(const TransportOptions& options) : options_(options) {
  properties_.name = "tcp";
  properties_.speed_gbps = 10;
  properties_.latency_us = 20;
  properties_.max_recvs = kMaxRecvs;
  properties_.lanes = std::to_string(std::clamp(options.tcp.sockets_per_comm, 1, tcp_wire::kMaxSockets)) + " socket(s) per comm";
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
