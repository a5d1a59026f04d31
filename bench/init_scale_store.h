// A rank's view of a store it shares with other simulated ranks (bench/init_scale): every call goes to the
// shared client, and this view counts the rank's own operations and the bytes of keys and values it moved.
#pragma once

#include <atomic>
#include <memory>

#include "bootstrap/store.h"

namespace megascale::bench {

class CountingStore : public Store {
 public:
  explicit CountingStore(std::shared_ptr<Store> shared) : shared_(std::move(shared)) {}

  void set(const std::string& key, const std::string& value) override {
    count(key.size() + value.size());
    shared_->set(key, value);
  }
  void multiSet(const std::vector<std::pair<std::string, std::string>>& pairs) override {
    size_t moved = 0;
    for (const auto& [key, value] : pairs) moved += key.size() + value.size();
    count(moved);
    shared_->multiSet(pairs);
  }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::string value = shared_->get(key, timeout);
    count(key.size() + value.size());
    return value;
  }
  std::vector<std::string> multiGet(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    std::vector<std::string> values = shared_->multiGet(keys, timeout);
    size_t moved = 0;
    for (size_t i = 0; i < keys.size(); ++i) moved += keys[i].size() + values[i].size();
    count(moved);
    return values;
  }
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) override {
    size_t moved = 0;
    for (const std::string& k : keys) moved += k.size();
    count(moved);
    shared_->wait(keys, timeout);
  }
  int64_t add(const std::string& key, int64_t delta) override {
    count(key.size() + 8);
    return shared_->add(key, delta);
  }
  std::string compareSet(const std::string& key, const std::string& expected, const std::string& desired) override {
    count(key.size() + expected.size() + desired.size());
    return shared_->compareSet(key, expected, desired);
  }
  bool deleteKey(const std::string& key) override {
    count(key.size());
    return shared_->deleteKey(key);
  }
  std::string url() const override { return shared_->url(); }

  uint64_t operations() const { return operations_.load(); }
  uint64_t bytes() const { return bytes_.load(); }

 private:
  void count(size_t bytes) {
    operations_.fetch_add(1, std::memory_order_relaxed);
    bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }

  std::shared_ptr<Store> shared_;
  std::atomic<uint64_t> operations_{0};
  std::atomic<uint64_t> bytes_{0};
};

}  // namespace megascale::bench
