#include "collectives/bootstrap/tcp_store_server.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>

#include "collectives/bootstrap/store_protocol.h"
#include "common/log.h"

namespace megascale {

namespace sp = store_protocol;

struct TcpStoreServer::Connection {
  Fd fd;
  std::optional<AuthSession> auth;  // engaged until the client has proven the secret
  std::string in;
  std::string out;
  size_t out_done = 0;
  bool want_write = false;
  // A parked get/wait: the request body, re-run when a key it needs appears.
  std::optional<std::string> parked;
  std::optional<Deadline> deadline;
  bool closed = false;
};

TcpStoreServer::TcpStoreServer(Options options) : options_(std::move(options)) {
  sockaddr_in bound{};
  listen_fd_ = listenTcp(options_.host, options_.port, 4096, &bound);
  port_ = ntohs(bound.sin_port);
  setNonBlocking(listen_fd_.get());
  epoll_fd_ = Fd(epoll_create1(EPOLL_CLOEXEC));
  wake_fd_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_fd_.valid() || !wake_fd_.valid()) {
    throw Error(ErrorCode::kSystem, "store server: epoll/eventfd failed: " + errnoText(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listen_fd_.get();
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev);
  ev.data.fd = wake_fd_.get();
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev);
}

TcpStoreServer::~TcpStoreServer() {
  stop();
  if (thread_.joinable()) thread_.join();
}

void TcpStoreServer::start() {
  thread_ = std::thread([this] { run(); });
}

void TcpStoreServer::stop() {
  stopping_.store(true);
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd_.get(), &one, sizeof(one));
  (void)ignored;
}

void TcpStoreServer::run() {
  std::vector<epoll_event> events(256);
  while (!stopping_.load()) {
    int n = epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()), nextTimeoutMs());
    if (n < 0 && errno != EINTR) {
      MSC_LOG_WARN("store server: epoll_wait failed: %s", errnoText(errno).c_str());
      break;
    }
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listen_fd_.get()) {
        acceptAll();
        continue;
      }
      if (fd == wake_fd_.get()) continue;
      auto it = connections_.find(fd);
      if (it == connections_.end()) continue;
      Connection& c = *it->second;
      if (c.closed) continue;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) onReadable(c);
      if (!c.closed && (events[i].events & EPOLLOUT)) onWritable(c);
    }
    expireDeadlines();
    for (int fd : to_close_) connections_.erase(fd);
    to_close_.clear();
  }
  for (auto& [fd, c] : connections_) c->fd.reset();
  connections_.clear();
  connection_count_.store(0);
}

void TcpStoreServer::acceptAll() {
  while (true) {
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        MSC_LOG_WARN("store server: accept failed: %s", errnoText(errno).c_str());
      }
      return;
    }
    setNoDelay(fd);
    auto c = std::make_unique<Connection>();
    c->fd = Fd(fd);
    c->auth.emplace(AuthSession::Role::kServer, options_.secret);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev);
    Connection& ref = *c;
    connections_[fd] = std::move(c);
    connection_count_.store(connections_.size());
    setDeadline(ref, deadlineAfter(options_.handshake_timeout));
    onWritable(ref);  // the server speaks first: send the challenge
  }
}

void TcpStoreServer::onReadable(Connection& c) {
  if (c.auth) {
    onWritable(c);
    return;
  }
  char chunk[65536];
  while (!c.closed) {
    ssize_t n = ::recv(c.fd.get(), chunk, sizeof(chunk), 0);
    if (n > 0) {
      c.in.append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    close(c);  // EOF or error: the client is gone
    return;
  }
  processInput(c);
}

void TcpStoreServer::onWritable(Connection& c) {
  if (c.auth) {
    bool done = false;
    Status s = c.auth->progress(c.fd.get(), &done);
    if (!s.isOk()) {
      MSC_LOG_INFO("store server: dropping a client: %s", s.message().c_str());
      close(c);
      return;
    }
    if (!done) {
      epoll_event ev{};
      ev.events = static_cast<uint32_t>(c.auth->wantedEvents() == POLLOUT ? EPOLLOUT : EPOLLIN);
      ev.data.fd = c.fd.get();
      epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
      return;
    }
    c.auth.reset();
    clearDeadline(c);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = c.fd.get();
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
    onReadable(c);  // a request may already be waiting behind the handshake
    return;
  }
  flush(c);
}

void TcpStoreServer::processInput(Connection& c) {
  size_t consumed = 0;
  while (!c.closed && !c.parked) {
    bool too_large = false;
    std::string_view rest(c.in.data() + consumed, c.in.size() - consumed);
    std::optional<uint32_t> body = sp::completeFrame(rest, &too_large);
    if (too_large) {
      MSC_LOG_WARN("store server: client sent an oversized frame; dropping it");
      close(c);
      return;
    }
    if (!body) break;
    std::string_view frame_body = rest.substr(4, *body);
    consumed += 4 + *body;
    if (!handleRequest(c, frame_body)) c.parked = std::string(frame_body);
  }
  c.in.erase(0, consumed);
}

bool TcpStoreServer::handleRequest(Connection& c, std::string_view body) {
  if (body.empty()) {
    close(c);
    return true;
  }
  auto op = static_cast<sp::Op>(static_cast<uint8_t>(body[0]));
  sp::Reader r(body.substr(1));
  auto bad = [&] {
    reply(c, sp::Writer(static_cast<uint8_t>(sp::Reply::kBadRequest)).finish());
    return true;
  };
  switch (op) {
    case sp::Op::kSet: {
      auto key = r.str();
      auto value = r.str();
      if (!key || !value || !r.atEnd()) return bad();
      data_[*key] = std::move(*value);
      reply(c, sp::Writer(0).finish());
      wakeWaiters(*key);
      return true;
    }
    case sp::Op::kGet:
    case sp::Op::kWait: {
      auto timeout_ms = r.u32();
      auto nkeys = r.u32();
      if (!timeout_ms || !nkeys || *nkeys > 1u << 20) return bad();
      std::vector<std::string> keys;
      for (uint32_t i = 0; i < *nkeys; ++i) {
        auto key = r.str();
        if (!key) return bad();
        keys.push_back(std::move(*key));
      }
      if (!r.atEnd()) return bad();
      std::vector<std::string> missing;
      for (const std::string& k : keys) {
        if (!data_.count(k)) missing.push_back(k);
      }
      if (missing.empty()) {
        sp::Writer w(0);
        if (op == sp::Op::kGet) {
          for (const std::string& k : keys) w.str(data_[k]);
        }
        reply(c, w.finish());
        clearDeadline(c);
        return true;
      }
      if (!c.parked) {  // first time: register, and time out on the server's clock
        for (const std::string& k : missing) waiters_[k].push_back(c.fd.get());
        setDeadline(c, deadlineAfter(std::chrono::milliseconds(*timeout_ms)));
      }
      return false;
    }
    case sp::Op::kAdd: {
      auto key = r.str();
      auto delta = r.i64();
      if (!key || !delta || !r.atEnd()) return bad();
      std::string& slot = data_[*key];
      int64_t value = slot.empty() ? 0 : std::strtoll(slot.c_str(), nullptr, 10);
      value += *delta;
      slot = std::to_string(value);
      reply(c, sp::Writer(0).i64(value).finish());
      wakeWaiters(*key);
      return true;
    }
    case sp::Op::kCompareSet: {
      auto key = r.str();
      auto expected = r.str();
      auto desired = r.str();
      if (!key || !expected || !desired || !r.atEnd()) return bad();
      auto it = data_.find(*key);
      bool swap = it == data_.end() ? expected->empty() : it->second == *expected;
      if (swap) data_[*key] = *desired;
      reply(c, sp::Writer(0).str(data_.count(*key) ? data_[*key] : std::string()).finish());
      if (swap) wakeWaiters(*key);
      return true;
    }
    case sp::Op::kDelete: {
      auto key = r.str();
      if (!key || !r.atEnd()) return bad();
      bool existed = data_.erase(*key) > 0;
      reply(c, sp::Writer(0).u32(existed ? 1 : 0).finish());
      return true;
    }
    case sp::Op::kPing:
      reply(c, sp::Writer(0).finish());
      return true;
  }
  return bad();
}

void TcpStoreServer::wakeWaiters(const std::string& key) {
  auto it = waiters_.find(key);
  if (it == waiters_.end()) return;
  std::vector<int> fds = std::move(it->second);
  waiters_.erase(it);
  for (int fd : fds) {
    auto conn = connections_.find(fd);
    if (conn == connections_.end() || conn->second->closed || !conn->second->parked) continue;
    tryCompleteParked(*conn->second);
  }
}

bool TcpStoreServer::tryCompleteParked(Connection& c) {
  std::string body = *c.parked;
  if (!handleRequest(c, body)) return false;  // still missing keys; its other waiter entries remain
  c.parked.reset();
  processInput(c);  // requests that queued up behind the parked one
  return true;
}

void TcpStoreServer::reply(Connection& c, std::string frame) {
  if (c.closed) return;
  if (c.out_done == c.out.size()) {
    c.out = std::move(frame);
    c.out_done = 0;
  } else {
    c.out += frame;
  }
  flush(c);
}

void TcpStoreServer::flush(Connection& c) {
  Status s = sendSome(c.fd.get(), c.out.data(), c.out.size(), &c.out_done);
  if (!s.isOk()) {
    close(c);
    return;
  }
  bool pending = c.out_done < c.out.size();
  if (!pending) {
    c.out.clear();
    c.out_done = 0;
  }
  if (pending != c.want_write) {
    c.want_write = pending;
    epoll_event ev{};
    ev.events = EPOLLIN | (pending ? EPOLLOUT : 0u);
    ev.data.fd = c.fd.get();
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
  }
}

void TcpStoreServer::close(Connection& c) {
  if (c.closed) return;
  c.closed = true;
  clearDeadline(c);
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  to_close_.push_back(c.fd.get());
  connection_count_.store(connections_.size() - to_close_.size());
}

void TcpStoreServer::setDeadline(Connection& c, Deadline deadline) {
  clearDeadline(c);
  c.deadline = deadline;
  deadlines_.insert({deadline, c.fd.get()});
}

void TcpStoreServer::clearDeadline(Connection& c) {
  if (!c.deadline) return;
  deadlines_.erase({*c.deadline, c.fd.get()});
  c.deadline.reset();
}

void TcpStoreServer::expireDeadlines() {
  Deadline now = Clock::now();
  while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
    int fd = deadlines_.begin()->second;
    deadlines_.erase(deadlines_.begin());
    auto it = connections_.find(fd);
    if (it == connections_.end()) continue;
    Connection& c = *it->second;
    c.deadline.reset();
    if (c.auth) {
      MSC_LOG_INFO("store server: a client did not finish the handshake in time; dropping it");
      close(c);
    } else if (c.parked) {
      c.parked.reset();  // stale waiter entries are skipped by wakeWaiters
      reply(c, sp::Writer(static_cast<uint8_t>(sp::Reply::kTimeout)).finish());
      processInput(c);
    }
  }
}

int TcpStoreServer::nextTimeoutMs() const {
  if (deadlines_.empty()) return -1;
  return msUntil(deadlines_.begin()->first) + 1;
}

std::unique_ptr<TcpStoreServer> startLoopbackStore(UniqueId* id) {
  *id = UniqueId::generate("tcp://127.0.0.1:1");
  TcpStoreServer::Options options;
  options.host = "127.0.0.1";
  options.secret = id->secret;
  auto server = std::make_unique<TcpStoreServer>(options);
  id->store_url = "tcp://127.0.0.1:" + std::to_string(server->port());
  server->start();
  return server;
}

}  // namespace megascale
