// Which ranks of a communicator share a host, as hierarchical schedules need it: hosts are numbered in the
// order of their lowest rank, and a host's ranks are kept in rank order (a rank's local index is its
// position there). Built from any per-rank host key (equal keys: same host).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace megascale {

struct HostLayout {
  std::vector<int> host_of;               // rank -> host
  std::vector<int> local_of;              // rank -> index among its host's ranks
  std::vector<std::vector<int>> ranks_of;  // host -> its ranks, ascending

  static HostLayout fromKeys(const std::vector<uint64_t>& keys);
  /// `hosts` hosts of `per_host` consecutive ranks each.
  static HostLayout blocks(int hosts, int per_host);
  /// blocks(hosts, per_host), one copy per process for as long as some holder keeps it: ranks simulated in one
  /// process (bench/init_scale) would otherwise each hold the whole world's layout.
  static std::shared_ptr<const HostLayout> sharedBlocks(int hosts, int per_host);
  /// From a rank -> host map (hosts numbered anyhow); for tests of uneven and interleaved layouts.
  static HostLayout fromHostOf(const std::vector<int>& host_of);

  int hosts() const { return static_cast<int>(ranks_of.size()); }
  int ranks() const { return static_cast<int>(host_of.size()); }
  int minRanksPerHost() const;
  /// Whether a hierarchy pays: several hosts, and some host with several ranks.
  bool hierarchical() const;
};

}  // namespace megascale
