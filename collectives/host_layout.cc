#include "collectives/host_layout.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "common/status.h"
#include "topology/cluster.h"

namespace megascale {

HostLayout HostLayout::fromCluster(const topology::Cluster& cluster, int nranks) {
  const std::vector<int> cluster_host = cluster.hostOfRanks(nranks);
  // Renumbered in the order of their lowest rank, with no map: a world of 16,384 ranks is built per process.
  std::vector<int> renumbered(cluster.hosts.size(), -1);
  HostLayout layout;
  layout.host_of.reserve(static_cast<size_t>(nranks));
  layout.local_of.reserve(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    const int h = cluster_host[static_cast<size_t>(r)];
    if (h < 0) {
      throw Error(ErrorCode::kInvalidArgument, "host layout: the cluster model places rank " + std::to_string(r) + " of " +
                                                   std::to_string(nranks) + " on no host");
    }
    int& host = renumbered[static_cast<size_t>(h)];
    if (host < 0) {
      host = static_cast<int>(layout.ranks_of.size());
      layout.ranks_of.emplace_back();
    }
    layout.host_of.push_back(host);
    layout.local_of.push_back(static_cast<int>(layout.ranks_of[static_cast<size_t>(host)].size()));
    layout.ranks_of[static_cast<size_t>(host)].push_back(r);
  }
  return layout;
}

HostLayout HostLayout::fromKeys(const std::vector<uint64_t>& keys) {
  return fromCluster(topology::Cluster::fromHostKeys(keys), static_cast<int>(keys.size()));
}

HostLayout HostLayout::blocks(int hosts, int per_host) {
  return fromCluster(topology::Cluster::blocks(hosts, per_host), hosts * per_host);
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

HostLayout HostLayout::ofMembers(const HostLayout& parent, const std::function<int(int)>& member, int count) {
  std::vector<int> host_of;
  host_of.reserve(static_cast<size_t>(std::max(count, 0)));
  for (int i = 0; i < count; ++i) host_of.push_back(parent.host_of.at(static_cast<size_t>(member(i))));
  return fromHostOf(host_of);
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
