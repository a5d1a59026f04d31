// Where the ranks of a job listen, as published in the store under "world/addr/<rank>": read on first need,
// then kept, so a rank's communicators and groups ask the store once per peer at most; prefetch() reads
// many peers in one round trip (a schedule's peers before it connects to them). Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "bootstrap/store.h"
#include "transport/address_list.h"

namespace megascale {

class AddressBook {
 public:
  AddressBook(std::shared_ptr<Store> store, std::chrono::milliseconds timeout) : store_(std::move(store)), timeout_(timeout) {}

  static std::string keyOf(int rank) { return "world/addr/" + std::to_string(rank); }

  /// The rank's addresses; waits for it to publish them until the timeout. Throws Error naming the rank.
  transport::ListenerAddresses lookup(int rank);
  /// Reads the ranks not yet known in one store call. Throws as lookup().
  void prefetch(const std::vector<int>& ranks);

 private:
  transport::ListenerAddresses decode(int rank, const std::string& bytes) const;

  std::shared_ptr<Store> store_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::unordered_map<int, transport::ListenerAddresses> known_;
};

}  // namespace megascale
