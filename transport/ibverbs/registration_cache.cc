#include "transport/ibverbs/registration_cache.h"

#include <cerrno>

namespace megascale::transport {

RegistrationCache::RegistrationCache(const VerbsApi& api, std::string device_name)
    : api_(api), device_name_(std::move(device_name)) {}

RegistrationCache::~RegistrationCache() {
  for (auto& [begin, entry] : entries_) api_.dereg_mr(entry.mr);
}

std::multimap<uintptr_t, RegistrationCache::Entry>::iterator RegistrationCache::findHolding(uintptr_t begin,
                                                                                             uintptr_t end,
                                                                                             bool device_memory) {
  // Entries starting at or before `begin`, nearest first: the range that holds it usually starts there.
  auto it = entries_.upper_bound(begin);
  while (it != entries_.begin()) {
    --it;
    if (it->second.end >= end && it->second.device_memory == device_memory) return it;
  }
  return entries_.end();
}

ibv_mr* RegistrationCache::countHolding(uintptr_t begin, uintptr_t end, bool device_memory) {
  auto it = findHolding(begin, end, device_memory);
  if (it == entries_.end()) return nullptr;
  ++it->second.uses;
  return it->second.mr;
}

Status RegistrationCache::acquire(uintptr_t begin, uintptr_t end, bool device_memory, const Register& make,
                                  ibv_mr** mr) {
  std::lock_guard<std::mutex> guard(lock_);
  if ((*mr = countHolding(begin, end, device_memory)) != nullptr) return Status::ok();
  ibv_mr* made = make(begin, static_cast<size_t>(end - begin));
  if (made == nullptr) {
    return Status(ErrorCode::kSystem, "ibverbs: registering " + std::to_string(end - begin) + " bytes of " +
                                          (device_memory ? "device" : "host") + " memory on " + device_name_ +
                                          " failed: " + errnoText(errno));
  }
  entries_.emplace(begin, Entry{end, device_memory, made, 1});
  made_.fetch_add(1, std::memory_order_relaxed);
  *mr = made;
  return Status::ok();
}

ibv_mr* RegistrationCache::acquireExisting(uintptr_t begin, uintptr_t end, bool device_memory) {
  std::lock_guard<std::mutex> guard(lock_);
  return countHolding(begin, end, device_memory);
}

bool RegistrationCache::release(ibv_mr* mr) {
  std::lock_guard<std::mutex> guard(lock_);
  auto [first, last] = entries_.equal_range(reinterpret_cast<uintptr_t>(mr->addr));  // keyed by where it starts
  for (auto it = first; it != last; ++it) {
    if (it->second.mr != mr) continue;
    if (--it->second.uses == 0) {
      api_.dereg_mr(mr);
      entries_.erase(it);
    }
    return true;
  }
  return false;
}

size_t RegistrationCache::size() const {
  std::lock_guard<std::mutex> guard(lock_);
  return entries_.size();
}

}  // namespace megascale::transport
