// A client of torch.distributed's TCPStore, enough to publish and read one key: torchrun's elastic agent
// serves one on MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True). The wire format of torch 1.13: a query type
// byte; strings and byte vectors as a little-endian uint64 length and the bytes; WAIT takes a key count and
// keys and answers one byte (STOP_WAITING) once every key exists; GET answers the value as a byte vector (and
// for a missing key closes the connection).
#include <cstdint>
#include <optional>
#include <string>

#include "bootstrap/launcher_channel.h"
#include "common/status.h"

namespace megascale {
namespace {

enum class TorchQuery : uint8_t { kSet = 0, kCompareSet = 1, kGet = 2, kAdd = 3, kCheck = 4, kWait = 5 };
constexpr uint8_t kStopWaiting = 0;
constexpr uint64_t kLargestValue = 1 << 20;  // a published URL is tiny; anything larger is not ours

class TorchStoreChannel : public LauncherChannel {
 public:
  TorchStoreChannel(const std::string& host, int port, Deadline deadline)
      : name_("torchrun agent store at " + host + ":" + std::to_string(port)),
        fd_(connectTcp(makeAddress(host, port), deadline, name_)) {}

  std::string name() const override { return name_; }

  void publish(const std::string& key, const std::string& value) override {
    std::string out;
    appendQuery(out, TorchQuery::kSet, key);
    appendBytes(out, value);
    check(sendAll(fd_.get(), out.data(), out.size(), deadlineAfter(std::chrono::seconds(30)), name_.c_str()), "set",
          key);
  }

  std::string read(int, const std::string& key, Deadline deadline) override {
    std::string out;
    appendQuery(out, TorchQuery::kWait, std::nullopt);
    appendU64(out, 1);
    appendKey(out, key);
    check(sendAll(fd_.get(), out.data(), out.size(), deadline, name_.c_str()), "wait", key);
    uint8_t answer = 0xff;
    Status s = recvAll(fd_.get(), &answer, 1, deadline, name_.c_str());
    if (s.code() == ErrorCode::kTimeout) {
      throw Error(ErrorCode::kTimeout, name_ + ": key " + key + " did not appear before the timeout (is rank 0 up?)");
    }
    check(s, "wait", key);
    if (answer != kStopWaiting) throw Error(ErrorCode::kPeerLost, name_ + ": unexpected answer to wait");
    out.clear();  // only now: the server drops a client that asks for a key it does not have
    appendQuery(out, TorchQuery::kGet, key);
    check(sendAll(fd_.get(), out.data(), out.size(), deadline, name_.c_str()), "get", key);
    uint64_t size = 0;
    check(recvAll(fd_.get(), &size, sizeof(size), deadline, name_.c_str()), "get", key);
    if (size > kLargestValue) {
      throw Error(ErrorCode::kPeerLost, name_ + ": value of " + std::to_string(size) + " bytes for key " + key);
    }
    std::string value(size, '\0');
    check(recvAll(fd_.get(), value.data(), size, deadline, name_.c_str()), "get", key);
    return value;
  }

 private:
  static void appendU64(std::string& out, uint64_t v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(v));  // little-endian, as torch sends it on x86/ARM
  }
  static void appendBytes(std::string& out, const std::string& bytes) {
    appendU64(out, bytes.size());
    out += bytes;
  }
  static void appendQuery(std::string& out, TorchQuery q, const std::optional<std::string>& key) {
    out.push_back(static_cast<char>(q));
    if (key) appendKey(out, *key);
  }
  // torch's clients put "/" before every key on the wire; so do we, so that torch sees our keys by name.
  static void appendKey(std::string& out, const std::string& key) { appendBytes(out, "/" + key); }
  void check(const Status& s, const char* op, const std::string& key) const {
    if (!s.isOk()) throw Error(s.code(), name_ + ": " + op + " " + key + ": " + s.message());
  }

  std::string name_;
  Fd fd_;
};

}  // namespace

std::unique_ptr<LauncherChannel> openTorchStoreChannel(const std::string& host, int port, Deadline deadline) {
  return std::make_unique<TorchStoreChannel>(host, port, deadline);
}

}  // namespace megascale
