// Rank placement for 3D parallelism (MegaScale §3.6: data-intensive groups under the same ToR; Megatron-LM:
// tensor parallel inside a host). The trainer numbers its layout tp + T * (dp + D * pp); these helpers give it
// the world ranks in an order where consecutive positions share a host first and a leaf switch next, so a TP
// group stays on one host and a DP group fills the hosts under one ToR before it crosses a spine.
#pragma once

#include <vector>

#include "topology/cluster.h"

namespace megascale::topology {

/// Host indices depth first through the rail-0 switch tree (hosts of one leaf switch together, leaf switches
/// of one parent together, in file order); hosts that no switch names follow in their own order.
std::vector<int> hostOrder(const Cluster& cluster);

/// The world ranks 0..world_size-1 in placement order: hosts in hostOrder, each host's ranks as listed.
/// Throws std::invalid_argument when a rank belongs to no host, or when a tensor-parallel group of `tp`
/// consecutive positions would take part of a host and part of another (a host's rank count must be a
/// multiple of tp, or tp a multiple of every host's rank count), naming the host.
std::vector<int> parallelRankOrder(const Cluster& cluster, int world_size, int tp);

}  // namespace megascale::topology
