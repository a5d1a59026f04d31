#include "launcher/link_check.h"

#include <algorithm>

namespace megascale::launcher {

LinkVerdict judgeLinks(const std::vector<LinkProbe>& probes, double slow_fraction) {
  LinkVerdict verdict;
  std::vector<double> rates;
  for (const LinkProbe& p : probes) {
    if (p.ok) rates.push_back(p.gbps);
  }
  if (!rates.empty()) {
    std::sort(rates.begin(), rates.end());
    const size_t mid = rates.size() / 2;
    verdict.median_gbps = rates.size() % 2 == 1 ? rates[mid] : (rates[mid - 1] + rates[mid]) / 2;
  }
  for (const LinkProbe& p : probes) {
    if (!p.ok) {
      verdict.failed.push_back(p);
    } else if (rates.size() > 1 && p.gbps < slow_fraction * verdict.median_gbps) {
      verdict.slow.push_back(p);
    }
  }
  for (const LinkProbe& out : verdict.failed) {
    for (const LinkProbe& in : verdict.failed) {
      const bool both_ways = in.to == out.from && in.from != out.to;
      if (both_ways && std::find(verdict.evict.begin(), verdict.evict.end(), out.from) == verdict.evict.end()) {
        verdict.evict.push_back(out.from);
      }
    }
  }
  std::sort(verdict.evict.begin(), verdict.evict.end());
  return verdict;
}

}  // namespace megascale::launcher
