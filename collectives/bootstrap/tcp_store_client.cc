#include "collectives/bootstrap/tcp_store_client.h"

#include "collectives/bootstrap/store_protocol.h"
#include "common/auth.h"

namespace megascale {

namespace sp = store_protocol;

namespace {
// Extra time the client waits beyond a server-side wait before declaring the store unresponsive.
constexpr std::chrono::milliseconds kGrace{5000};
}  // namespace

TcpStoreClient::TcpStoreClient(const StoreAddress& address, const UniqueId& id, std::string who,
                               std::chrono::milliseconds timeout)
    : address_(makeAddress(address.host, address.port)),
      url_(id.store_url),
      secret_(id.secret),
      job_prefix_(id.job_id + "/"),
      who_(std::move(who)),
      timeout_(timeout) {
  connect(deadlineAfter(timeout));
}

void TcpStoreClient::connect(Deadline deadline) {
  std::string what = who_ + ": store " + url_;
  while (true) {
    Fd fd = connectTcp(address_, deadline, what);
    setNonBlocking(fd.get());
    AuthSession auth(AuthSession::Role::kClient, secret_);
    Status s = AuthSession::runBlocking(auth, fd.get(), deadline, what);
    if (s.isOk()) {
      fd_ = std::move(fd);
      return;
    }
    // A listen backlog overflow can reset a fresh connection; retry those, fail on anything else.
    if (s.code() != ErrorCode::kPeerLost || Clock::now() >= deadline) throw Error(s.code(), s.message());
  }
}

std::string TcpStoreClient::call(const std::string& frame, const char* op, const std::string& key,
                                 std::chrono::milliseconds server_wait) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string what = who_ + ": store " + url_ + " " + op + "('" + key + "')";
  Deadline deadline = deadlineAfter(server_wait + (server_wait.count() > 0 ? kGrace : timeout_));
  if (!fd_.valid()) connect(deadlineAfter(timeout_));
  Status s = sendAll(fd_.get(), frame.data(), frame.size(), deadline, what.c_str());
  uint8_t header[5];
  if (s.isOk()) s = recvAll(fd_.get(), header, sizeof(header), deadline, what.c_str());
  std::string body;
  if (s.isOk()) {
    uint32_t len = uint32_t(header[0]) | uint32_t(header[1]) << 8 | uint32_t(header[2]) << 16 | uint32_t(header[3]) << 24;
    if (len == 0 || len > sp::kMaxFrameBytes) {
      s = Status(ErrorCode::kPeerLost, what + ": malformed reply from the store");
    } else {
      body.resize(len - 1);
      s = recvAll(fd_.get(), body.data(), body.size(), deadline, what.c_str());
    }
  }
  if (!s.isOk()) {
    fd_.reset();  // the stream is in an unknown state; reconnect on the next call
    throw Error(s.code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kPeerLost,
                s.message() + (s.code() == ErrorCode::kTimeout ? " (store unresponsive)" : " (store lost)"));
  }
  switch (static_cast<sp::Reply>(header[4])) {
    case sp::Reply::kOk:
      return body;
    case sp::Reply::kTimeout:
      throw Error(ErrorCode::kTimeout, what + ": timed out after " + std::to_string(server_wait.count()) +
                                           " ms waiting for the key (raise MEGASCALE_TIMEOUT_MS?)");
    default:
      throw Error(ErrorCode::kInternal, what + ": the store rejected the request as malformed");
  }
}

void TcpStoreClient::set(const std::string& key, const std::string& value) {
  call(sp::Writer(uint8_t(sp::Op::kSet)).str(scoped(key)).str(value).finish(), "set", key, {});
}

std::string TcpStoreClient::get(const std::string& key, std::chrono::milliseconds timeout) {
  std::string body = call(sp::Writer(uint8_t(sp::Op::kGet)).u32(uint32_t(timeout.count())).u32(1).str(scoped(key)).finish(),
                          "get", key, timeout);
  sp::Reader r(body);
  auto value = r.str();
  if (!value) throw Error(ErrorCode::kPeerLost, who_ + ": store " + url_ + " get('" + key + "'): malformed reply");
  return *value;
}

void TcpStoreClient::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  sp::Writer w(uint8_t(sp::Op::kWait));
  w.u32(uint32_t(timeout.count())).u32(uint32_t(keys.size()));
  std::string names;
  for (const std::string& k : keys) {
    w.str(scoped(k));
    names += (names.empty() ? "" : ",") + k;
  }
  call(w.finish(), "wait", names, timeout);
}

int64_t TcpStoreClient::add(const std::string& key, int64_t delta) {
  std::string body = call(sp::Writer(uint8_t(sp::Op::kAdd)).str(scoped(key)).i64(delta).finish(), "add", key, {});
  auto value = sp::Reader(body).i64();
  if (!value) throw Error(ErrorCode::kPeerLost, who_ + ": store " + url_ + " add('" + key + "'): malformed reply");
  return *value;
}

std::string TcpStoreClient::compareSet(const std::string& key, const std::string& expected, const std::string& desired) {
  std::string body = call(sp::Writer(uint8_t(sp::Op::kCompareSet)).str(scoped(key)).str(expected).str(desired).finish(),
                          "compareSet", key, {});
  auto value = sp::Reader(body).str();
  if (!value) throw Error(ErrorCode::kPeerLost, who_ + ": store " + url_ + " compareSet('" + key + "'): malformed reply");
  return *value;
}

bool TcpStoreClient::deleteKey(const std::string& key) {
  std::string body = call(sp::Writer(uint8_t(sp::Op::kDelete)).str(scoped(key)).finish(), "delete", key, {});
  auto existed = sp::Reader(body).u32();
  if (!existed) throw Error(ErrorCode::kPeerLost, who_ + ": store " + url_ + " delete('" + key + "'): malformed reply");
  return *existed != 0;
}

}  // namespace megascale
