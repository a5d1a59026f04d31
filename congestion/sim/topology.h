// Topologies given by parameters, built into a Network: a k-ary fat tree (three-tier Clos) and a single switch.
#pragma once

#include <vector>

#include "congestion/sim/network.h"

namespace megascale::congestion::sim {

struct LinkSpec {
  double host_bps = 100e9;    // host to edge (ToR)
  double fabric_bps = 100e9;  // switch to switch
  Picoseconds delay = 1 * kMicrosecond;
};

struct FatTree {
  int k = 0;
  std::vector<int> edges, aggregations, cores;  // node ids
};

/// k-ary fat tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k/2 hosts per edge switch
/// (k^3/4 hosts, host h under edge h / (k/2)). Routes are computed.
FatTree buildFatTree(Network& net, int k, const LinkSpec& links);

/// `hosts` hosts on one switch; returns its node id. Routes are computed.
int buildStar(Network& net, int hosts, const LinkSpec& links);

}  // namespace megascale::congestion::sim
