// Client of the embedded TCP store. One connection, one request at a time (calls are serialized by a mutex,
// so threads may share it). Waits happen on the server's clock; the client adds a grace period so a dead
// store is detected, not waited on forever.
#pragma once

#include <mutex>
#include <string>

#include "collectives/bootstrap/store.h"
#include "collectives/bootstrap/unique_id.h"
#include "common/socket.h"

namespace megascale {

class TcpStoreClient : public Store {
 public:
  /// Connects and authenticates, retrying until `timeout` while the server is not up. Throws Error.
  TcpStoreClient(const StoreAddress& address, const UniqueId& id, std::string who, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool deleteKey(const std::string& key) override;
  std::string url() const override { return url_; }

 private:
  /// Sends one request and returns the reply body after its status byte. Throws Error naming op and key.
  std::string call(const std::string& frame, const char* op, const std::string& key,
                   std::chrono::milliseconds server_wait);
  void connect(Deadline deadline);
  std::string scoped(const std::string& key) const { return job_prefix_ + key; }

  sockaddr_in address_;
  std::string url_;
  std::string secret_;
  std::string job_prefix_;
  std::string who_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  Fd fd_;
};

}  // namespace megascale
