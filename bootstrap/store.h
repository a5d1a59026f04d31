// The bootstrap key-value store. Ranks publish their transport addresses here and read only the peers they
// need. Backends: the embedded TCP store (tcp://host:port) and Redis (redis://host:port). Every call that can
// wait takes a timeout; every error names the store, the operation, the key and who asked.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace megascale {

class Store {
 public:
  virtual ~Store() = default;

  virtual void set(const std::string& key, const std::string& value) = 0;
  /// Sets every pair, in one round trip where the backend can (the default sets them one by one).
  virtual void multiSet(const std::vector<std::pair<std::string, std::string>>& pairs);
  /// Waits until the key exists, then returns its value. Throws Error(kTimeout) at the deadline.
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  /// Waits until every key exists, then returns their values in order; one round trip where the backend can.
  virtual std::vector<std::string> multiGet(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  /// Waits until all keys exist. Throws Error(kTimeout) naming the keys still missing.
  virtual void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
  /// Atomically adds delta to the integer stored at key (0 if absent) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  /// Atomically sets key to desired if its value is expected (or it is absent and expected is empty).
  /// Returns the value stored afterwards.
  virtual std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) = 0;
  /// Removes the key; returns whether it existed.
  virtual bool deleteKey(const std::string& key) = 0;

  /// "tcp://host:port" or "redis://host:port", for messages.
  virtual std::string url() const = 0;
};

struct UniqueId;

/// Connects to the store the unique id names, authenticates with its secret and scopes keys by its job id.
/// `who` ("rank 3") appears in every error message. Retries until `timeout` if the store is not up yet.
std::unique_ptr<Store> connectStore(const UniqueId& id, const std::string& who, std::chrono::milliseconds timeout);

}  // namespace megascale
