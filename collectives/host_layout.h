// Which ranks of a communicator share a host, as schedules and the chooser need it: hosts are numbered in the
// order of their lowest rank, and a host's ranks are kept in rank order (a rank's local index is its
// position there). A world's layout is derived from the cluster model (topology::Cluster: the launcher's
// placement, or the hosts the ranks reported); a group's from its parent's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace megascale {

namespace topology {
struct Cluster;
}

struct HostLayout {
  std::vector<int> host_of;               // rank -> host
  std::vector<int> local_of;              // rank -> index among its host's ranks
  std::vector<std::vector<int>> ranks_of;  // host -> its ranks, ascending

  /// Ranks 0..nranks-1 on the cluster's hosts (Host::ranks). Throws Error(kInvalidArgument) naming a rank no
  /// host holds.
  static HostLayout fromCluster(const topology::Cluster& cluster, int nranks);
  /// Ranks that report a host key each (equal keys: same host): fromCluster(Cluster::fromHostKeys(keys)).
  static HostLayout fromKeys(const std::vector<uint64_t>& keys);
  /// `hosts` hosts of `per_host` consecutive ranks each: fromCluster(Cluster::blocks(hosts, per_host)).
  static HostLayout blocks(int hosts, int per_host);
  /// blocks(hosts, per_host), one copy per process for as long as some holder keeps it: ranks simulated in one
  /// process (bench/init_scale) would otherwise each hold the whole world's layout.
  static std::shared_ptr<const HostLayout> sharedBlocks(int hosts, int per_host);
  /// A group's layout: its rank i is rank member(i) of `parent`, for i < count.
  static HostLayout ofMembers(const HostLayout& parent, const std::function<int(int)>& member, int count);
  /// From a rank -> host map (hosts numbered anyhow); for tests of uneven and interleaved layouts.
  static HostLayout fromHostOf(const std::vector<int>& host_of);

  int hosts() const { return static_cast<int>(ranks_of.size()); }
  int ranks() const { return static_cast<int>(host_of.size()); }
  int minRanksPerHost() const;
  /// Whether a hierarchy pays: several hosts, and some host with several ranks.
  bool hierarchical() const;
};

}  // namespace megascale
