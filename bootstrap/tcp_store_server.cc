#include "bootstrap/tcp_store_server.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <set>
#include <tuple>

#include "bootstrap/store_protocol.h"
#include "common/config.h"
#include "common/crypto.h"
#include "common/log.h"

namespace megascale {

namespace sp = store_protocol;

namespace {
// The deadline of a connection's handshake, in the same set as its parked requests' deadlines.
constexpr uint64_t kHandshake = UINT64_MAX;

int defaultLoops() {
  const int64_t configured = config::getInt("MEGASCALE_STORE_THREADS");
  if (configured > 0) return static_cast<int>(std::min<int64_t>(configured, 64));
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 4u));
}

std::string replyFrame(sp::Reply status, uint32_t id) { return sp::Writer(static_cast<uint8_t>(status)).u32(id).finish(); }
}  // namespace

struct TcpStoreServer::Connection {
  Fd fd;
  uint64_t serial = 0;
  std::optional<AuthSession> auth;  // engaged until the client has proven the secret
  std::optional<Deadline> handshake_deadline;
  std::string in;
  std::string out;
  size_t out_done = 0;
  bool want_write = false;
  bool closed = false;
  bool batching = false;  // replies to a batch of requests leave together, in one send, after the batch
  struct Parked {
    std::string body;  // the whole request, re-run when a key it needs appears
    Deadline deadline;
  };
  std::unordered_map<uint32_t, Parked> parked;  // by request id
};

struct TcpStoreServer::Loop {
  uint32_t index = 0;
  Fd epoll_fd;
  Fd wake_fd;
  std::unordered_map<int, std::unique_ptr<Connection>> connections;
  std::set<std::tuple<Deadline, int, uint64_t>> deadlines;  // (when, fd, request id or kHandshake)
  std::vector<int> to_close;
  std::mutex inbox_mutex;  // parked requests other loops found ready to re-run
  std::vector<WaiterRef> inbox;
};

TcpStoreServer::TcpStoreServer(Options options) : options_(std::move(options)) {
  sockaddr_in bound{};
  listen_fd_ = listenTcp(options_.host, options_.port, 4096, &bound);
  port_ = ntohs(bound.sin_port);
  randomBytes(&incarnation_, sizeof(incarnation_));
  const int n = options_.threads > 0 ? options_.threads : defaultLoops();
  for (int i = 0; i < n; ++i) {
    auto loop = std::make_unique<Loop>();
    loop->index = static_cast<uint32_t>(i);
    loop->epoll_fd = Fd(epoll_create1(EPOLL_CLOEXEC));
    loop->wake_fd = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!loop->epoll_fd.valid() || !loop->wake_fd.valid()) {
      throw Error(ErrorCode::kSystem, "store server: epoll/eventfd failed: " + errnoText(errno));
    }
    epoll_event ev{};
    // Every loop accepts; EPOLLEXCLUSIVE wakes one idle loop per new connection instead of all of them.
    ev.events = EPOLLIN | (n > 1 ? EPOLLEXCLUSIVE : 0u);
    ev.data.fd = listen_fd_.get();
    epoll_ctl(loop->epoll_fd.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev);
    ev.events = EPOLLIN;
    ev.data.fd = loop->wake_fd.get();
    epoll_ctl(loop->epoll_fd.get(), EPOLL_CTL_ADD, loop->wake_fd.get(), &ev);
    loops_.push_back(std::move(loop));
  }
}

TcpStoreServer::~TcpStoreServer() {
  stop();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void TcpStoreServer::start() {
  for (auto& loop : loops_) threads_.emplace_back([this, l = loop.get()] { serve(*l); });
}

void TcpStoreServer::run() {
  for (size_t i = 1; i < loops_.size(); ++i) threads_.emplace_back([this, l = loops_[i].get()] { serve(*l); });
  serve(*loops_[0]);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void TcpStoreServer::stop() {
  stopping_.store(true);
  for (auto& loop : loops_) signalEventFd(loop->wake_fd.get());
}

void TcpStoreServer::noteConnections(long delta) {
  const size_t now = connection_count_.fetch_add(static_cast<size_t>(delta)) + static_cast<size_t>(delta);
  size_t peak = peak_connections_.load();
  while (now > peak && !peak_connections_.compare_exchange_weak(peak, now)) {
  }
}

void TcpStoreServer::serve(Loop& loop) {
  std::vector<epoll_event> events(256);
  while (!stopping_.load()) {
    int timeout_ms = -1;
    if (!loop.deadlines.empty()) timeout_ms = msUntil(std::get<0>(*loop.deadlines.begin())) + 1;
    int n = epoll_wait(loop.epoll_fd.get(), events.data(), static_cast<int>(events.size()), timeout_ms);
    if (n < 0 && errno != EINTR) {
      MSC_LOG_WARN("store server: epoll_wait failed: %s", errnoText(errno).c_str());
      break;
    }
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == listen_fd_.get()) {
        acceptAll(loop);
        continue;
      }
      if (fd == loop.wake_fd.get()) {
        drainEventFd(fd);
        continue;
      }
      auto it = loop.connections.find(fd);
      if (it == loop.connections.end()) continue;
      Connection& c = *it->second;
      if (c.closed) continue;
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) onReadable(loop, c);
      if (!c.closed && (events[i].events & EPOLLOUT)) onWritable(loop, c);
    }
    drainInbox(loop);
    expireDeadlines(loop);
    for (int fd : loop.to_close) loop.connections.erase(fd);
    loop.to_close.clear();
  }
  const long open = static_cast<long>(std::count_if(loop.connections.begin(), loop.connections.end(),
                                                    [](const auto& c) { return !c.second->closed; }));
  loop.connections.clear();
  noteConnections(-open);
}

void TcpStoreServer::acceptAll(Loop& loop) {
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
    c->serial = next_serial_.fetch_add(1);
    c->auth.emplace(AuthSession::Role::kServer, options_.secret);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(loop.epoll_fd.get(), EPOLL_CTL_ADD, fd, &ev);
    Connection& ref = *c;
    loop.connections[fd] = std::move(c);
    noteConnections(1);
    ref.handshake_deadline = deadlineAfter(options_.handshake_timeout);
    loop.deadlines.insert({*ref.handshake_deadline, fd, kHandshake});
    onWritable(loop, ref);  // the server speaks first: send the challenge
  }
}

void TcpStoreServer::onReadable(Loop& loop, Connection& c) {
  if (c.auth) {
    onWritable(loop, c);
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
    close(loop, c);  // EOF or error: the client is gone
    return;
  }
  processInput(loop, c);
}

void TcpStoreServer::onWritable(Loop& loop, Connection& c) {
  if (c.auth) {
    bool done = false;
    Status s = c.auth->progress(c.fd.get(), &done);
    if (!s.isOk()) {
      MSC_LOG_INFO("store server: dropping a client: %s", s.message().c_str());
      close(loop, c);
      return;
    }
    if (!done) {
      epoll_event ev{};
      ev.events = static_cast<uint32_t>(c.auth->wantedEvents() == POLLOUT ? EPOLLOUT : EPOLLIN);
      ev.data.fd = c.fd.get();
      epoll_ctl(loop.epoll_fd.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
      return;
    }
    c.auth.reset();
    loop.deadlines.erase({*c.handshake_deadline, c.fd.get(), kHandshake});
    c.handshake_deadline.reset();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = c.fd.get();
    epoll_ctl(loop.epoll_fd.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
    onReadable(loop, c);  // a request may already be waiting behind the handshake
    return;
  }
  flush(loop, c);
}

void TcpStoreServer::processInput(Loop& loop, Connection& c) {
  size_t consumed = 0;
  c.batching = true;
  while (!c.closed) {
    bool too_large = false;
    std::string_view rest(c.in.data() + consumed, c.in.size() - consumed);
    std::optional<uint32_t> body = sp::completeFrame(rest, &too_large);
    if (too_large) {
      MSC_LOG_WARN("store server: client sent an oversized frame; dropping it");
      close(loop, c);
      return;
    }
    if (!body) break;
    handleRequest(loop, c, rest.substr(4, *body), false);
    consumed += 4 + *body;
  }
  c.batching = false;
  if (!c.closed && c.out_done < c.out.size()) flush(loop, c);
  c.in.erase(0, consumed);
}

void TcpStoreServer::handleRequest(Loop& loop, Connection& c, std::string_view body, bool rerun) {
  sp::Reader r(body.empty() ? body : body.substr(1));
  const std::optional<uint32_t> id = r.u32();
  if (!id) {  // too short to carry an id: nothing to answer to
    reply(loop, c, replyFrame(sp::Reply::kBadRequest, 0));
    return;
  }
  auto bad = [&] { reply(loop, c, replyFrame(sp::Reply::kBadRequest, *id)); };
  std::vector<WaiterRef> woken;
  auto takeWaiters = [&](const std::string& key) {  // data_mutex_ held
    auto it = waiters_.find(key);
    if (it == waiters_.end()) return;
    woken.insert(woken.end(), it->second.begin(), it->second.end());
    waiters_.erase(it);
  };
  switch (static_cast<sp::Op>(static_cast<uint8_t>(body[0]))) {
    case sp::Op::kSet: {
      auto key = r.str();
      auto value = r.str();
      if (!key || !value || !r.atEnd()) return bad();
      {
        std::lock_guard<std::mutex> lock(data_mutex_);
        data_[*key] = std::move(*value);
        takeWaiters(*key);
      }
      reply(loop, c, replyFrame(sp::Reply::kOk, *id));
      break;
    }
    case sp::Op::kMultiSet: {
      auto n = r.u32();
      if (!n || *n > sp::kMaxKeysPerRequest) return bad();
      std::vector<std::pair<std::string, std::string>> pairs;
      for (uint32_t i = 0; i < *n; ++i) {
        auto key = r.str();
        auto value = r.str();
        if (!key || !value) return bad();
        pairs.emplace_back(std::move(*key), std::move(*value));
      }
      if (!r.atEnd()) return bad();
      {
        std::lock_guard<std::mutex> lock(data_mutex_);
        for (auto& [key, value] : pairs) {
          data_[key] = std::move(value);
          takeWaiters(key);
        }
      }
      reply(loop, c, replyFrame(sp::Reply::kOk, *id));
      break;
    }
    case sp::Op::kGet:
    case sp::Op::kWait:
      answerOrPark(loop, c, *id, body, static_cast<sp::Op>(body[0]) == sp::Op::kGet, rerun);
      return;
    case sp::Op::kAdd: {
      auto key = r.str();
      auto delta = r.i64();
      if (!key || !delta || !r.atEnd()) return bad();
      int64_t value;
      {
        std::lock_guard<std::mutex> lock(data_mutex_);
        std::string& slot = data_[*key];
        value = (slot.empty() ? 0 : std::strtoll(slot.c_str(), nullptr, 10)) + *delta;
        slot = std::to_string(value);
        takeWaiters(*key);
      }
      reply(loop, c, sp::Writer(0).u32(*id).i64(value).finish());
      break;
    }
    case sp::Op::kCompareSet: {
      auto key = r.str();
      auto expected = r.str();
      auto desired = r.str();
      if (!key || !expected || !desired || !r.atEnd()) return bad();
      std::string now;
      {
        std::lock_guard<std::mutex> lock(data_mutex_);
        auto it = data_.find(*key);
        const bool swap = it == data_.end() ? expected->empty() : it->second == *expected;
        if (swap) {
          data_[*key] = *desired;
          takeWaiters(*key);
        }
        it = data_.find(*key);
        if (it != data_.end()) now = it->second;
      }
      reply(loop, c, sp::Writer(0).u32(*id).str(now).finish());
      break;
    }
    case sp::Op::kDelete: {
      auto key = r.str();
      if (!key || !r.atEnd()) return bad();
      bool existed;
      {
        std::lock_guard<std::mutex> lock(data_mutex_);
        existed = data_.erase(*key) > 0;
      }
      reply(loop, c, sp::Writer(0).u32(*id).u32(existed ? 1 : 0).finish());
      break;
    }
    case sp::Op::kPing:
      if (!r.atEnd()) return bad();
      reply(loop, c, sp::Writer(0).u32(*id).u64(incarnation_).finish());
      break;
    default:
      return bad();
  }
  for (const WaiterRef& ref : woken) {
    if (ref.loop == loop.index) {
      rerunParked(loop, ref);
      continue;
    }
    Loop& other = *loops_[ref.loop];
    bool was_empty;
    {
      std::lock_guard<std::mutex> lock(other.inbox_mutex);
      was_empty = other.inbox.empty();
      other.inbox.push_back(ref);
    }
    if (was_empty) signalEventFd(other.wake_fd.get());
  }
}

void TcpStoreServer::answerOrPark(Loop& loop, Connection& c, uint32_t id, std::string_view body, bool get, bool rerun) {
  auto bad = [&] { reply(loop, c, replyFrame(sp::Reply::kBadRequest, id)); };
  sp::Reader r(body.substr(5));  // past the opcode and the id
  auto timeout_ms = r.u32();
  auto nkeys = r.u32();
  if (!timeout_ms || !nkeys || *nkeys > sp::kMaxKeysPerRequest) return bad();
  std::vector<std::string> keys;
  keys.reserve(*nkeys);
  for (uint32_t i = 0; i < *nkeys; ++i) {
    auto key = r.str();
    if (!key) return bad();
    keys.push_back(std::move(*key));
  }
  if (!r.atEnd()) return bad();
  if (!rerun && c.parked.count(id)) return bad();  // the client reused the id of a request still waiting
  sp::Writer answer(0);
  answer.u32(id);
  bool missing = false;
  {
    // Checking and registering under one lock: a set on another loop cannot slip in between and be missed.
    std::lock_guard<std::mutex> lock(data_mutex_);
    const WaiterRef me{loop.index, c.fd.get(), c.serial, id};
    for (const std::string& k : keys) {
      auto it = data_.find(k);
      if (it != data_.end()) {
        if (get && !missing) answer.str(it->second);
        continue;
      }
      missing = true;
      std::vector<WaiterRef>& list = waiters_[k];
      const bool listed = rerun && std::any_of(list.begin(), list.end(), [&](const WaiterRef& w) {
                            return w.fd == me.fd && w.serial == me.serial && w.request == me.request;
                          });
      if (!listed) list.push_back(me);
    }
  }
  if (!missing) {
    if (rerun) {
      auto it = c.parked.find(id);
      loop.deadlines.erase({it->second.deadline, c.fd.get(), id});
      c.parked.erase(it);
    }
    reply(loop, c, answer.finish());
    return;
  }
  if (rerun) return;  // still waiting; its entries on the missing keys remain
  if (c.parked.size() >= sp::kMaxParkedPerConnection) return bad();  // its waiter entries go stale and are skipped
  const Deadline deadline = deadlineAfter(std::chrono::milliseconds(*timeout_ms));
  c.parked[id] = Connection::Parked{std::string(body), deadline};
  loop.deadlines.insert({deadline, c.fd.get(), id});
}

void TcpStoreServer::rerunParked(Loop& loop, const WaiterRef& ref) {
  auto conn = loop.connections.find(ref.fd);
  if (conn == loop.connections.end()) return;
  Connection& c = *conn->second;
  if (c.closed || c.serial != ref.serial) return;
  auto parked = c.parked.find(ref.request);
  if (parked == c.parked.end()) return;  // answered or timed out since
  const std::string body = parked->second.body;
  handleRequest(loop, c, body, true);
}

void TcpStoreServer::drainInbox(Loop& loop) {
  std::vector<WaiterRef> refs;
  {
    std::lock_guard<std::mutex> lock(loop.inbox_mutex);
    refs.swap(loop.inbox);
  }
  for (const WaiterRef& ref : refs) rerunParked(loop, ref);
}

void TcpStoreServer::reply(Loop& loop, Connection& c, std::string frame) {
  if (c.closed) return;
  if (c.out_done == c.out.size()) {
    c.out = std::move(frame);
    c.out_done = 0;
  } else {
    c.out += frame;
  }
  if (!c.batching) flush(loop, c);
}

void TcpStoreServer::flush(Loop& loop, Connection& c) {
  Status s = sendSome(c.fd.get(), c.out.data(), c.out.size(), &c.out_done);
  if (!s.isOk()) {
    close(loop, c);
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
    epoll_ctl(loop.epoll_fd.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
  }
}

void TcpStoreServer::close(Loop& loop, Connection& c) {
  if (c.closed) return;
  c.closed = true;
  if (c.handshake_deadline) loop.deadlines.erase({*c.handshake_deadline, c.fd.get(), kHandshake});
  for (const auto& [id, parked] : c.parked) loop.deadlines.erase({parked.deadline, c.fd.get(), id});
  c.parked.clear();  // their waiter entries go stale: the serial no longer matches a live connection
  epoll_ctl(loop.epoll_fd.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  loop.to_close.push_back(c.fd.get());
  noteConnections(-1);
}

void TcpStoreServer::expireDeadlines(Loop& loop) {
  const Deadline now = Clock::now();
  while (!loop.deadlines.empty() && std::get<0>(*loop.deadlines.begin()) <= now) {
    const auto [when, fd, what] = *loop.deadlines.begin();
    loop.deadlines.erase(loop.deadlines.begin());
    auto it = loop.connections.find(fd);
    if (it == loop.connections.end()) continue;
    Connection& c = *it->second;
    if (what == kHandshake) {
      c.handshake_deadline.reset();
      if (c.auth) {
        MSC_LOG_INFO("store server: a client did not finish the handshake in time; dropping it");
        close(loop, c);
      }
      continue;
    }
    const uint32_t id = static_cast<uint32_t>(what);
    if (c.parked.erase(id) > 0) reply(loop, c, replyFrame(sp::Reply::kTimeout, id));  // its waiter entries go stale
  }
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
