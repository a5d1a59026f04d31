// Topologies given by parameters, built into a Network: a k-ary fat tree (three-tier Clos) and a single switch.
#pragma once

#include <vector>

#include "sim/network.h"

namespace megascale::sim {

struct LinkSpec {
  double host_bps = 100e9;    // host to edge (ToR)
  double fabric_bps = 100e9;  // switch to switch
  Picoseconds delay = 1 * kMicrosecond;
  double uplink_bps = 0;      // star: host to switch, when it differs from the switch's port to the host
};

struct FatTree {
  int k = 0;
  std::vector<int> edges, aggregations, cores;  // node ids
};

/// k-ary fat tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k/2 hosts per edge switch
/// (k^3/4 hosts, host h under edge h / (k/2)). Routes are computed.
FatTree buildFatTree(Network& net, int k, const LinkSpec& links);

/// MegaScale's rail-optimized Clos: each server has `rails` NICs (hosts server * rails + rail); servers come in
/// groups sharing one ToR per rail; the ToRs of a rail connect to that rail's aggregation plane, and every
/// aggregation switch connects to every core. Same-rail traffic stays below the cores; only cross-rail traffic
/// crosses them.
struct RailSpec {
  int servers = 16;
  int rails = 8;
  int servers_per_group = 4;  // share one set of ToRs (MegaScale: up to 64)
  int aggregations_per_rail = 2;
  int tor_uplinks_per_aggregation = 1;  // links from each ToR to each aggregation switch of its rail
  int cores = 2;
  int aggregation_uplinks_per_core = 1;
  double host_bps = 200e9;
  double fabric_bps = 400e9;
  Picoseconds delay = 1 * kMicrosecond;
};

struct RailOptimized {
  std::vector<int> tors, aggregations, cores;  // node ids; tors[group * rails + rail]
};

/// Throws std::invalid_argument for sizes that do not fit together. Routes are computed.
RailOptimized buildRailOptimized(Network& net, const RailSpec& spec);

/// Downlink over uplink bandwidth of a ToR in `spec` (1 = non-blocking).
double railOversubscription(const RailSpec& spec);

/// `hosts` hosts on one switch; returns its node id. Routes are computed.
int buildStar(Network& net, int hosts, const LinkSpec& links);

}  // namespace megascale::sim
