#include "collectives/address_book.h"

#include "common/status.h"

namespace megascale {

transport::ListenerAddresses AddressBook::decode(int rank, const std::string& bytes) const {
  return transport::decodeAddressList(bytes, "rank " + std::to_string(rank));
}

transport::ListenerAddresses AddressBook::lookup(int rank) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = known_.find(rank);
    if (it != known_.end()) return it->second;
  }
  prefetch({rank});
  std::lock_guard<std::mutex> lock(mutex_);
  return known_.at(rank);
}

void AddressBook::prefetch(const std::vector<int>& ranks) {
  std::vector<int> wanted;
  std::vector<std::string> keys;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int r : ranks) {
      if (known_.count(r)) continue;
      wanted.push_back(r);
      keys.push_back(keyOf(r));
    }
  }
  if (wanted.empty()) return;
  std::vector<std::string> values;
  try {
    values = store_->multiGet(keys, timeout_);
  } catch (const Error& e) {
    std::string names;
    for (size_t i = 0; i < wanted.size() && i < 8; ++i) names += (i ? ", " : "") + std::to_string(wanted[i]);
    if (wanted.size() > 8) names += ", ...";
    const bool timed_out = e.code() == ErrorCode::kTimeout;
    throw Error(e.code(), std::string(timed_out ? "rank" : "looking up rank") + (wanted.size() > 1 ? "s " : " ") + names +
                              (timed_out ? " did not publish an address within " + std::to_string(timeout_.count()) +
                                               " ms (did it start, in this job? MEGASCALE_TIMEOUT_MS sets the limit): "
                                         : ": ") +
                              e.what());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < wanted.size(); ++i) known_[wanted[i]] = decode(wanted[i], values[i]);
}

}  // namespace megascale
