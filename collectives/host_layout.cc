#include "collectives/host_layout.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace megascale {

HostLayout HostLayout::fromKeys(const std::vector<uint64_t>& keys) {
  std::map<uint64_t, int> index;
  std::vector<int> host_of;
  for (uint64_t key : keys) host_of.push_back(index.emplace(key, static_cast<int>(index.size())).first->second);
  return fromHostOf(host_of);
}

HostLayout HostLayout::blocks(int hosts, int per_host) {
  // Built directly (hosts in order, ranks in order): fromHostOf's map would cost a lookup per rank.
  HostLayout layout;
  layout.host_of.reserve(static_cast<size_t>(hosts) * static_cast<size_t>(per_host));
  layout.local_of.reserve(layout.host_of.capacity());
  layout.ranks_of.resize(static_cast<size_t>(hosts));
  for (int h = 0, r = 0; h < hosts; ++h) {
    for (int l = 0; l < per_host; ++l, ++r) {
      layout.host_of.push_back(h);
      layout.local_of.push_back(l);
      layout.ranks_of[static_cast<size_t>(h)].push_back(r);
    }
  }
  return layout;
}

std::shared_ptr<const HostLayout> HostLayout::sharedBlocks(int hosts, int per_host) {
  static std::mutex mutex;
  static std::map<std::pair<int, int>, std::weak_ptr<const HostLayout>> made;
  std::lock_guard<std::mutex> lock(mutex);
  std::weak_ptr<const HostLayout>& slot = made[{hosts, per_host}];
  std::shared_ptr<const HostLayout> layout = slot.lock();
  if (!layout) {
    layout = std::make_shared<const HostLayout>(blocks(hosts, per_host));
    slot = layout;
  }
  return layout;
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
