#include "collectives/link_costs.h"

#include <algorithm>

namespace megascale {

LinkReport LinkReport::of(const LinkCost& link) {
  return LinkReport{static_cast<uint64_t>(link.bytes_per_s), static_cast<uint64_t>(link.latency_s * 1e9)};
}

LinkCost agreedNetwork(const std::vector<LinkReport>& reports) {
  uint64_t rate = UINT64_MAX, latency_ns = 0;
  for (const LinkReport& r : reports) {
    if (r.bytes_per_s > 0) rate = std::min(rate, r.bytes_per_s);
    latency_ns = std::max(latency_ns, r.latency_ns);
  }
  LinkCost link = LinkCosts{}.network;  // no rank reported a rate: the default's
  if (rate != UINT64_MAX) link.bytes_per_s = static_cast<double>(rate);
  if (!reports.empty()) link.latency_s = static_cast<double>(latency_ns) * 1e-9;
  return link;
}

}  // namespace megascale
