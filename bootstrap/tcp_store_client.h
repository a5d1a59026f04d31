// Client of the embedded TCP store. One connection that any number of threads share: each request carries an
// id, so a get parked on the server does not hold up the requests behind it; whichever caller is waiting reads
// the replies for all of them (no reader thread). Waits happen on the server's clock; the client adds a grace
// period so a dead store is detected, not waited on forever. After a lost connection the next call reconnects,
// and fails clearly if the store that answers is a restarted one (the job's keys are gone).
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "bootstrap/store.h"
#include "bootstrap/unique_id.h"
#include "common/socket.h"

namespace megascale {

class TcpStoreClient : public Store {
 public:
  /// Connects and authenticates, retrying until `timeout` while the server is not up. Throws Error.
  TcpStoreClient(const StoreAddress& address, const UniqueId& id, std::string who, std::chrono::milliseconds timeout);
  ~TcpStoreClient() override;

  void set(const std::string& key, const std::string& value) override;
  void multiSet(const std::vector<std::pair<std::string, std::string>>& pairs) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  std::vector<std::string> multiGet(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool deleteKey(const std::string& key) override;
  std::string url() const override { return url_; }

 private:
  struct Connection;
  struct Pending;
  /// Sends one request (its fields after the opcode and id) and returns the reply body after the status and
  /// id. Throws Error naming op and key.
  std::string call(uint8_t op, const std::string& fields, const char* op_name, const std::string& key,
                   std::chrono::milliseconds server_wait);
  /// Connects, authenticates and learns the server's incarnation; throws if it is not the one first seen.
  std::shared_ptr<Connection> connect(Deadline deadline);
  /// The live connection, (re)connecting if there is none; `lock` holds mutex_.
  std::shared_ptr<Connection> liveConnection(std::unique_lock<std::mutex>& lock, Deadline deadline);
  /// Reads what has arrived and hands each reply to its caller; as the reader, until `mine` is answered or the
  /// deadline passes. Called without mutex_.
  Status readReplies(Connection& c, Pending& mine, Deadline deadline);
  /// Fails every request still waiting on `c` and drops it; mutex_ held.
  void breakConnection(Connection& c, const Status& why);
  /// The reader stepped down: wakes one waiting caller to read next; mutex_ held.
  void handReaderOn();
  std::string scoped(const std::string& key) const { return job_prefix_ + key; }
  std::string describe(const char* op, const std::string& key) const;

  sockaddr_in address_;
  std::string url_;
  std::string secret_;
  std::string job_prefix_;
  std::string who_;
  std::chrono::milliseconds timeout_;

  std::mutex mutex_;  // guards what follows
  std::condition_variable changed_;  // a connection came or went
  std::shared_ptr<Connection> connection_;
  bool connecting_ = false;
  bool reading_ = false;
  uint32_t next_id_ = 1;
  std::unordered_map<uint32_t, Pending*> pending_;
  std::optional<uint64_t> incarnation_;  // of the first store this client reached
  std::string restarted_;                // set once the store turned out to have restarted: every call fails so
};

}  // namespace megascale
