#include "bootstrap/tcp_store_client.h"

#include <poll.h>
#include <sys/socket.h>

#include <exception>

#include "bootstrap/store_protocol.h"
#include "common/auth.h"

namespace megascale {

namespace sp = store_protocol;

namespace {
// Extra time the client waits beyond a server-side wait before declaring the store unresponsive.
constexpr std::chrono::milliseconds kGrace{5000};
constexpr size_t kReplyHead = 4 + 1 + 4;  // length, status, request id

uint32_t littleEndian32(const char* p) {
  return uint32_t(uint8_t(p[0])) | uint32_t(uint8_t(p[1])) << 8 | uint32_t(uint8_t(p[2])) << 16 |
         uint32_t(uint8_t(p[3])) << 24;
}
}  // namespace

struct TcpStoreClient::Connection {
  Fd fd;
  std::mutex send_mutex;  // one frame at a time on the wire
  std::string in;         // bytes read and not yet dispatched; only the current reader touches it
  bool alive = true;      // guarded by the client's mutex_
};

struct TcpStoreClient::Pending {
  Connection* connection = nullptr;
  std::condition_variable wake;  // its reply came, or it may become the reader: only its caller wakes
  bool done = false;
  Status error;  // the connection failed before the reply came
  uint8_t status = 0;
  std::string body;
};

TcpStoreClient::TcpStoreClient(const StoreAddress& address, const UniqueId& id, std::string who,
                               std::chrono::milliseconds timeout)
    : address_(makeAddress(address.host, address.port)),
      url_(id.store_url),
      secret_(id.secret),
      job_prefix_(id.job_id + "/"),
      who_(std::move(who)),
      timeout_(timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  liveConnection(lock, deadlineAfter(timeout));
}

TcpStoreClient::~TcpStoreClient() = default;

std::string TcpStoreClient::describe(const char* op, const std::string& key) const {
  return who_ + ": store " + url_ + " " + op + "('" + key + "')";
}

std::shared_ptr<TcpStoreClient::Connection> TcpStoreClient::connect(Deadline deadline) {
  const std::string what = who_ + ": store " + url_;
  while (true) {
    Fd fd = connectTcp(address_, deadline, what);
    setNonBlocking(fd.get());
    AuthSession auth(AuthSession::Role::kClient, secret_);
    Status s = AuthSession::runBlocking(auth, fd.get(), deadline, what);
    if (s.isOk()) {
      // Ask for the incarnation before anything else rides on this connection.
      const std::string ping = sp::Writer(uint8_t(sp::Op::kPing)).u32(0).finish();
      char reply[kReplyHead + 8];
      s = sendAll(fd.get(), ping.data(), ping.size(), deadline, what.c_str());
      if (s.isOk()) s = recvAll(fd.get(), reply, sizeof(reply), deadline, what.c_str());
      if (s.isOk() && (littleEndian32(reply) != sizeof(reply) - 4 || reply[4] != 0)) {
        s = Status(ErrorCode::kPeerLost, what + ": the server did not answer like a megascale store (an older version?)");
      }
      if (s.isOk()) {
        const uint64_t incarnation = sp::Reader(std::string_view(reply + kReplyHead, 8)).i64().value();
        std::lock_guard<std::mutex> lock(mutex_);
        if (!incarnation_) incarnation_ = incarnation;
        if (*incarnation_ != incarnation) {
          restarted_ = what + ": the store restarted since this client first reached it, so the keys the job "
                              "published there are gone (the ranks' addresses among them); restart the job";
          throw Error(ErrorCode::kPeerLost, restarted_);
        }
        auto c = std::make_shared<Connection>();
        c->fd = std::move(fd);
        return c;
      }
    }
    // A listen backlog overflow can reset a fresh connection; retry those, fail on anything else.
    if (s.code() != ErrorCode::kPeerLost || Clock::now() >= deadline) throw Error(s.code(), s.message());
  }
}

std::shared_ptr<TcpStoreClient::Connection> TcpStoreClient::liveConnection(std::unique_lock<std::mutex>& lock,
                                                                          Deadline deadline) {
  while (true) {
    if (!restarted_.empty()) throw Error(ErrorCode::kPeerLost, restarted_);
    if (connection_) return connection_;
    if (!connecting_) {
      connecting_ = true;
      lock.unlock();
      std::shared_ptr<Connection> made;
      std::exception_ptr failure;
      try {
        made = connect(std::min(deadline, deadlineAfter(timeout_)));
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      connecting_ = false;
      changed_.notify_all();
      if (failure) std::rethrow_exception(failure);
      connection_ = made;
      return made;
    }
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !connection_) {
      throw Error(ErrorCode::kTimeout, who_ + ": store " + url_ + ": timed out waiting for the connection to the store");
    }
  }
}

void TcpStoreClient::breakConnection(Connection& c, const Status& why) {
  if (!c.alive) return;
  c.alive = false;
  if (connection_.get() == &c) connection_.reset();
  ::shutdown(c.fd.get(), SHUT_RDWR);  // wakes a reader or sender blocked on it; the fd closes with the last user
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->second->connection != &c) {
      ++it;
      continue;
    }
    it->second->done = true;
    it->second->error = why;
    it->second->wake.notify_one();
    it = pending_.erase(it);
  }
  changed_.notify_all();
}

void TcpStoreClient::handReaderOn() {
  // One waiter on the live connection takes over reading; waking them all would cost a wake-up per waiter
  // per reply when thousands of ranks share the client.
  for (auto& [id, pending] : pending_) {
    if (!pending->done && pending->connection == connection_.get()) {
      pending->wake.notify_one();
      return;
    }
  }
}

Status TcpStoreClient::readReplies(Connection& c, Pending& mine, Deadline deadline) {
  const std::string what = who_ + ": store " + url_;
  while (true) {
    size_t consumed = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      while (c.in.size() - consumed >= kReplyHead) {
        const char* head = c.in.data() + consumed;
        const uint32_t len = littleEndian32(head);
        if (len < 5 || len > sp::kMaxFrameBytes) return Status(ErrorCode::kPeerLost, what + ": malformed reply from the store");
        if (c.in.size() - consumed < 4 + size_t(len)) break;
        auto it = pending_.find(littleEndian32(head + 5));
        if (it != pending_.end()) {  // else its caller gave up on it
          it->second->status = static_cast<uint8_t>(head[4]);
          it->second->body.assign(head + kReplyHead, len - 5);
          it->second->done = true;
          it->second->wake.notify_one();
          pending_.erase(it);
        }
        consumed += 4 + len;
      }
      c.in.erase(0, consumed);
      if (mine.done) return Status::ok();
    }
    const int wait_ms = msUntil(deadline);
    if (wait_ms <= 0) return Status(ErrorCode::kTimeout, what + ": no reply in time");
    pollfd p{c.fd.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno != EINTR) return Status(ErrorCode::kSystem, what + ": poll failed: " + errnoText(errno));
    if (ready <= 0) continue;
    char chunk[65536];
    while (true) {
      const ssize_t n = ::recv(c.fd.get(), chunk, sizeof(chunk), 0);
      if (n > 0) {
        c.in.append(chunk, static_cast<size_t>(n));
        if (static_cast<size_t>(n) < sizeof(chunk)) break;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return n == 0 ? Status(ErrorCode::kPeerLost, what + ": the store closed the connection")
                    : socketError("recv", errno);
    }
  }
}

std::string TcpStoreClient::call(uint8_t op, const std::string& fields, const char* op_name, const std::string& key,
                                 std::chrono::milliseconds server_wait) {
  const Deadline deadline = deadlineAfter(server_wait + (server_wait.count() > 0 ? kGrace : timeout_));
  const std::string what = describe(op_name, key);
  // A request that changes nothing when repeated goes again over a new connection when the old one drops: a
  // store that was only unreachable for a moment costs nothing, and a restarted one is reported as such.
  const auto code = static_cast<sp::Op>(op);
  const bool repeatable = code != sp::Op::kAdd && code != sp::Op::kCompareSet && code != sp::Op::kDelete;
  while (true) {
    Pending mine;
    std::unique_lock<std::mutex> lock(mutex_);
    std::shared_ptr<Connection> c;
    try {
      c = liveConnection(lock, deadline);
    } catch (const Error& e) {
      throw Error(e.code(), what + ": " + e.what());
    }
    uint32_t id = next_id_++;
    if (pending_.count(id)) id = next_id_++;  // wrapped onto a request still waiting (four billion later)
    mine.connection = c.get();
    pending_[id] = &mine;
    lock.unlock();
    std::string frame = sp::Writer(op).u32(id).finish();
    frame += fields;
    const uint32_t body = static_cast<uint32_t>(frame.size() - 4);
    for (int i = 0; i < 4; ++i) frame[i] = static_cast<char>((body >> (8 * i)) & 0xff);
    Status sent;
    {
      std::lock_guard<std::mutex> send(c->send_mutex);
      sent = sendAll(c->fd.get(), frame.data(), frame.size(), deadline, what.c_str());
    }
    lock.lock();
    if (!sent.isOk() && !mine.done) breakConnection(*c, sent);
    while (!mine.done) {
      if (!reading_ && c->alive) {
        reading_ = true;
        lock.unlock();
        Status s = readReplies(*c, mine, deadline);
        lock.lock();
        reading_ = false;
        if (!s.isOk() && s.code() != ErrorCode::kTimeout) breakConnection(*c, s);
        handReaderOn();
        if (!mine.done && Clock::now() >= deadline) break;
      } else if (mine.wake.wait_until(lock, deadline) == std::cv_status::timeout && !mine.done) {
        break;
      }
    }
    if (!mine.done) {
      pending_.erase(id);
      throw Error(ErrorCode::kTimeout, what + ": no reply in time (store unresponsive)");
    }
    lock.unlock();
    if (!mine.error.isOk()) {
      if (repeatable && mine.error.code() == ErrorCode::kPeerLost && Clock::now() < deadline) continue;
      throw Error(mine.error.code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kPeerLost,
                  what + ": " + mine.error.message() + " (store lost)");
    }
    switch (static_cast<sp::Reply>(mine.status)) {
      case sp::Reply::kOk:
        return std::move(mine.body);
      case sp::Reply::kTimeout:
        throw Error(ErrorCode::kTimeout, what + ": timed out after " + std::to_string(server_wait.count()) +
                                             " ms waiting for the key (raise MEGASCALE_TIMEOUT_MS?)");
      default:
        throw Error(ErrorCode::kInternal, what + ": the store rejected the request as malformed");
    }
  }
}

namespace {
// The fields of a request, without the frame's length, opcode and id (call() adds those).
std::string fieldsOf(sp::Writer w) { return w.finish().substr(5); }
}  // namespace

void TcpStoreClient::set(const std::string& key, const std::string& value) {
  call(uint8_t(sp::Op::kSet), fieldsOf(sp::Writer(0).str(scoped(key)).str(value)), "set", key, {});
}

void TcpStoreClient::multiSet(const std::vector<std::pair<std::string, std::string>>& pairs) {
  if (pairs.empty()) return;
  sp::Writer w(0);
  w.u32(static_cast<uint32_t>(pairs.size()));
  for (const auto& [key, value] : pairs) w.str(scoped(key)).str(value);
  call(uint8_t(sp::Op::kMultiSet), fieldsOf(std::move(w)), "multiSet", pairs.front().first + (pairs.size() > 1 ? ",..." : ""), {});
}

std::string TcpStoreClient::get(const std::string& key, std::chrono::milliseconds timeout) {
  return multiGet({key}, timeout).front();
}

std::vector<std::string> TcpStoreClient::multiGet(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  if (keys.empty()) return {};
  sp::Writer w(0);
  w.u32(uint32_t(timeout.count())).u32(uint32_t(keys.size()));
  for (const std::string& k : keys) w.str(scoped(k));
  const std::string name = keys.size() == 1 ? keys.front() : keys.front() + ",... (" + std::to_string(keys.size()) + " keys)";
  const std::string body = call(uint8_t(sp::Op::kGet), fieldsOf(std::move(w)), "get", name, timeout);
  sp::Reader r(body);
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto value = r.str();
    if (!value) throw Error(ErrorCode::kPeerLost, describe("get", name) + ": malformed reply");
    values.push_back(std::move(*value));
  }
  return values;
}

void TcpStoreClient::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  sp::Writer w(0);
  w.u32(uint32_t(timeout.count())).u32(uint32_t(keys.size()));
  std::string names;
  for (const std::string& k : keys) {
    w.str(scoped(k));
    names += (names.empty() ? "" : ",") + k;
  }
  call(uint8_t(sp::Op::kWait), fieldsOf(std::move(w)), "wait", names, timeout);
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  std::string body = call(uint8_t(sp::Op::kAdd), fieldsOf(sp::Writer(0).str(scoped(key)).i64(delta)), "add", key, {});
  auto value = sp::Reader(body).i64();
  if (!value) throw Error(ErrorCode::kPeerLost, describe("add", key) + ": malformed reply");
  return *value;
}

std::string TcpStoreClient::compareSet(const std::string& key, const std::string& expected, const std::string& desired) {
  std::string body = call(uint8_t(sp::Op::kCompareSet), fieldsOf(sp::Writer(0).str(scoped(key)).str(expected).str(desired)),
                          "compareSet", key, {});
  auto value = sp::Reader(body).str();
  if (!value) throw Error(ErrorCode::kPeerLost, describe("compareSet", key) + ": malformed reply");
  return *value;
}

bool TcpStoreClient::deleteKey(const std::string& key) {
  std::string body = call(uint8_t(sp::Op::kDelete), fieldsOf(sp::Writer(0).str(scoped(key))), "delete", key, {});
  auto existed = sp::Reader(body).u32();
  if (!existed) throw Error(ErrorCode::kPeerLost, describe("delete", key) + ": malformed reply");
  return *existed != 0;
}

}  // namespace megascale
