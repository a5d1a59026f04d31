#include "bootstrap/redis_store.h"

#include <cerrno>
#include <mutex>
#include <thread>
#include <vector>

#include "common/crypto.h"
#include "common/socket.h"
#include "common/status.h"

#ifdef MEGASCALE_WITH_HIREDIS
#include <hiredis/hiredis.h>
#endif

namespace megascale {

std::string redisPasswordFor(const UniqueId& id) {
  static const char kLabel[] = "megascale-redis-password";
  Digest d = hmacSha256(id.secret, kLabel, sizeof(kLabel) - 1);
  return toHex(d.data(), d.size());
}

#ifdef MEGASCALE_WITH_HIREDIS

namespace {

class RedisStore : public Store {
 public:
  RedisStore(const StoreAddress& address, const UniqueId& id, std::string who, std::chrono::milliseconds timeout)
      : url_(id.store_url), prefix_("megascale/" + id.job_id + "/"), who_(std::move(who)), timeout_(timeout) {
    Deadline deadline = deadlineAfter(timeout);
    std::string last_error;
    while (true) {
      timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
      ctx_.reset(redisConnectWithTimeout(address.host.c_str(), address.port, tv));
      if (ctx_ && ctx_->err == 0) break;
      last_error = ctx_ ? ctx_->errstr : "out of memory";
      ctx_.reset();
      if (Clock::now() >= deadline) {
        throw Error(ErrorCode::kTimeout, who_ + ": store " + url_ + ": cannot connect: " + last_error);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    redisSetTimeout(ctx_.get(), timeval{static_cast<time_t>(timeout.count() / 1000),
                                  static_cast<suseconds_t>((timeout.count() % 1000) * 1000)});
    std::string password = redisPasswordFor(id);
    Reply auth = command("auth", "", {"AUTH", password});
    if (auth->type == REDIS_REPLY_ERROR) {
      throw Error(ErrorCode::kAuthFailed, who_ + ": store " + url_ + " refused authentication: " +
                                              std::string(auth->str, auth->len) + " (wrong job secret?)");
    }
  }

  void set(const std::string& key, const std::string& value) override {
    expectOk(command("set", key, {"SET", prefix_ + key, value}), "set", key);
  }

  void multiSet(const std::vector<std::pair<std::string, std::string>>& pairs) override {
    if (pairs.empty()) return;
    std::vector<std::string> args{"MSET"};
    for (const auto& [key, value] : pairs) {
      args.push_back(prefix_ + key);
      args.push_back(value);
    }
    expectOk(command("multiSet", pairs.front().first, args), "multiSet", pairs.front().first);
  }

  std::vector<std::string> multiGet(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    if (keys.empty()) return {};
    std::vector<std::string> args{"MGET"};
    for (const std::string& k : keys) args.push_back(prefix_ + k);
    std::vector<std::string> values;
    const std::string name = keys.front() + (keys.size() > 1 ? ",..." : "");
    pollUntil(name, timeout, "get", [&] {  // one MGET per try; done once no key is missing
      Reply r = command("get", name, args);
      if (r->type != REDIS_REPLY_ARRAY || r->elements != keys.size()) return false;
      values.clear();
      for (size_t i = 0; i < r->elements; ++i) {
        const redisReply* e = r->element[i];
        if (e->type != REDIS_REPLY_STRING) return false;
        values.emplace_back(e->str, e->len);
      }
      return true;
    });
    return values;
  }

  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    return multiGet({key}, timeout).front();
  }

  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::vector<std::string> args{"EXISTS"};
    std::string names;
    for (const std::string& k : keys) {
      args.push_back(prefix_ + k);
      names += (names.empty() ? "" : ",") + k;
    }
    pollUntil(names, timeout, "wait", [&] {
      Reply r = command("wait", names, args);
      return r->type == REDIS_REPLY_INTEGER && r->integer == static_cast<long long>(keys.size());
    });
  }

  int64_t add(const std::string& key, int64_t delta) override {
    Reply r = command("add", key, {"INCRBY", prefix_ + key, std::to_string(delta)});
    if (r->type != REDIS_REPLY_INTEGER) fail(ErrorCode::kInternal, "add", key, replyText(r.get()));
    return r->integer;
  }

  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override {
    // Atomic on the server: absent counts as matching an empty expected value.
    static const char kScript[] =
        "local v = redis.call('GET', KEYS[1]) "
        "if (v == false and ARGV[1] == '') or v == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return ARGV[2] end "
        "if v == false then return '' end return v";
    Reply r = command("compareSet", key, {"EVAL", kScript, "1", prefix_ + key, expected, desired});
    if (r->type != REDIS_REPLY_STRING) fail(ErrorCode::kInternal, "compareSet", key, replyText(r.get()));
    return std::string(r->str, r->len);
  }

  bool deleteKey(const std::string& key) override {
    Reply r = command("delete", key, {"DEL", prefix_ + key});
    return r->type == REDIS_REPLY_INTEGER && r->integer > 0;
  }

  std::string url() const override { return url_; }

 private:
  struct ReplyDeleter {
    void operator()(redisReply* r) const { freeReplyObject(r); }
  };
  using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

  [[noreturn]] void fail(ErrorCode code, const char* op, const std::string& key, const std::string& why) const {
    throw Error(code, who_ + ": store " + url_ + " " + op + "('" + key + "'): " + why);
  }

  static std::string replyText(const redisReply* r) {
    return r->type == REDIS_REPLY_ERROR ? std::string(r->str, r->len) : "unexpected reply type " + std::to_string(r->type);
  }

  Reply command(const char* op, const std::string& key, const std::vector<std::string>& args) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* raw = static_cast<redisReply*>(redisCommandArgv(ctx_.get(), static_cast<int>(argv.size()), argv.data(), lens.data()));
    if (raw == nullptr) {
      ErrorCode code = ctx_->err == REDIS_ERR_IO && errno == EAGAIN ? ErrorCode::kTimeout : ErrorCode::kPeerLost;
      fail(code, op, key, std::string("redis connection failed: ") + ctx_->errstr);
    }
    return Reply(raw);
  }

  void expectOk(Reply r, const char* op, const std::string& key) {
    if (r->type == REDIS_REPLY_ERROR) fail(ErrorCode::kInternal, op, key, replyText(r.get()));
  }

  template <typename Ready>
  void pollUntil(const std::string& what, std::chrono::milliseconds timeout, const char* op, Ready ready) {
    Deadline deadline = deadlineAfter(timeout);
    auto backoff = std::chrono::milliseconds(1);
    while (!ready()) {
      if (Clock::now() >= deadline) {
        fail(ErrorCode::kTimeout, op, what,
             "timed out after " + std::to_string(timeout.count()) + " ms waiting for the key (raise MEGASCALE_TIMEOUT_MS?)");
      }
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(50));
    }
  }

  std::string url_;
  std::string prefix_;
  std::string who_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  struct ContextDeleter {
    void operator()(redisContext* c) const { redisFree(c); }
  };
  std::unique_ptr<redisContext, ContextDeleter> ctx_;  // freed even when the constructor throws
};

}  // namespace

std::unique_ptr<Store> connectRedisStore(const StoreAddress& address, const UniqueId& id, const std::string& who,
                                         std::chrono::milliseconds timeout) {
  return std::make_unique<RedisStore>(address, id, who, timeout);
}

#else

std::unique_ptr<Store> connectRedisStore(const StoreAddress&, const UniqueId& id, const std::string& who,
                                         std::chrono::milliseconds) {
  throw Error(ErrorCode::kUnavailable, who + ": store " + id.store_url +
                                           ": megascale was built without hiredis (install libhiredis-dev and rebuild)");
}

#endif

}  // namespace megascale
