#include "transport/udp/dpdk/arrival_stamps.h"

#include <string_view>

namespace megascale::transport {
namespace {

uint64_t keyOf(const uint8_t* bytes) {
  return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(bytes), ArrivalStamps::kDoorbellBytes));
}

}  // namespace

void ArrivalStamps::onDoorbell(const uint8_t* bytes, size_t size, int64_t realtime_ns) {
  if (size != kDoorbellBytes || realtime_ns <= 0) return;
  if (stamps_.size() >= kMostRemembered) stamps_.clear();
  stamps_[keyOf(bytes)] = realtime_ns;
}

int64_t ArrivalStamps::take(const uint8_t* datagram, size_t size) {
  if (size <= kDoorbellBytes || stamps_.empty()) return 0;
  const auto found = stamps_.find(keyOf(datagram));
  if (found == stamps_.end()) return 0;
  const int64_t stamp = found->second;
  stamps_.erase(found);
  return stamp;
}

}  // namespace megascale::transport
