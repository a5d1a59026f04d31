// The registrations callers made (registerMemory, NCCL's regMr), one ibv_mr per address range, counted:
// NCCL registers the same buffer once per comm and peer, and a transfer from memory inside a registered range
// needs no registration of its own. Only registrations a caller made are kept and shared. The caller promises
// that memory stays mapped until it deregisters, so the pages an entry pinned are still the ones at its
// addresses; a cache of transfer-time registrations would go stale once the memory is freed and mapped again,
// and a real NIC would then move bytes to and from the old pages.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

#include "common/status.h"
#include "transport/ibverbs/verbs_api.h"

namespace megascale::transport {

class RegistrationCache {
 public:
  /// Makes the registration of [begin, end): null with errno set on failure.
  using Register = std::function<ibv_mr*(uintptr_t begin, size_t bytes)>;

  RegistrationCache(const VerbsApi& api, std::string device_name);
  ~RegistrationCache();

  /// The registration of [begin, end): a kept one whose range holds it (counted once more), else a new one
  /// from `make` (kept, counted once). Kinds never share: host and device memory are registered differently.
  Status acquire(uintptr_t begin, uintptr_t end, bool device_memory, const Register& make, ibv_mr** mr);
  /// A kept registration holding [begin, end), counted once more; null when none does.
  ibv_mr* acquireExisting(uintptr_t begin, uintptr_t end, bool device_memory);
  /// Counts one use off; the last deregisters. False: `mr` is not a kept registration.
  bool release(ibv_mr* mr);
  /// Registrations kept now.
  size_t size() const;
  /// Every registration made on the device since it opened: kept ones, and those a transfer made for itself
  /// (countTransferRegistration). What a steady state should stop adding to.
  uint64_t made() const { return made_.load(std::memory_order_relaxed); }
  void countTransferRegistration() { made_.fetch_add(1, std::memory_order_relaxed); }
  /// Registrations and deregistrations go one at a time: providers differ in what they allow concurrently.
  std::mutex& lock() { return lock_; }

 private:
  struct Entry {
    uintptr_t end;
    bool device_memory;
    ibv_mr* mr;
    int uses;
  };
  // Lock held.
  std::multimap<uintptr_t, Entry>::iterator findHolding(uintptr_t begin, uintptr_t end, bool device_memory);
  /// The registration holding [begin, end), counted once more; null when none does. Lock held.
  ibv_mr* countHolding(uintptr_t begin, uintptr_t end, bool device_memory);

  const VerbsApi& api_;
  std::string device_name_;
  mutable std::mutex lock_;
  std::multimap<uintptr_t, Entry> entries_;  // by first address
  std::atomic<uint64_t> made_{0};
};

}  // namespace megascale::transport
