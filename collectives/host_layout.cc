#include "collectives/host_layout.h"

#include <algorithm>
#include <map>

namespace megascale {

HostLayout HostLayout::fromKeys(const std::vector<uint64_t>& keys) {
  std::map<uint64_t, int> index;
  std::vector<int> host_of;
  for (uint64_t key : keys) host_of.push_back(index.emplace(key, static_cast<int>(index.size())).first->second);
  return fromHostOf(host_of);
}

HostLayout HostLayout::blocks(int hosts, int per_host) {
  std::vector<int> host_of;
  for (int h = 0; h < hosts; ++h) host_of.insert(host_of.end(), static_cast<size_t>(per_host), h);
  return fromHostOf(host_of);
}

HostLayout HostLayout::fromHostOf(const std::vector<int>& given) {
  HostLayout layout;
  std::map<int, int> renumbered;  // hosts in the order of their lowest rank
  for (size_t r = 0; r < given.size(); ++r) {
    const int host = renumbered.emplace(given[r], static_cast<int>(renumbered.size())).first->second;
    if (host == static_cast<int>(layout.ranks_of.size())) layout.ranks_of.emplace_back();
    layout.host_of.push_back(host);
    layout.local_of.push_back(static_cast<int>(layout.ranks_of[static_cast<size_t>(host)].size()));
    layout.ranks_of[static_cast<size_t>(host)].push_back(static_cast<int>(r));
  }
  return layout;
}

int HostLayout::minRanksPerHost() const {
  size_t least = ranks_of.empty() ? 0 : ranks_of.front().size();
  for (const auto& ranks : ranks_of) least = std::min(least, ranks.size());
  return static_cast<int>(least);
}

bool HostLayout::hierarchical() const {
  return hosts() > 1 && std::any_of(ranks_of.begin(), ranks_of.end(), [](const auto& r) { return r.size() > 1; });
}

}  // namespace megascale
