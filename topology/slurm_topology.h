// Reading and writing the switch tree in Slurm's topology.conf syntax (topology/tree plugin):
//   SwitchName=tor0 Nodes=node[01-04] LinkSpeed=200
//   SwitchName=spine Switches=tor[0-1]
// One line per switch; keys are case-insensitive; '#' starts a comment; a line ending in '\' continues.
// Rails: a rail-optimized cluster cables a host to one leaf switch per rail, so a host named by several leaf
// switches has that many rails, numbered in the order its switches appear in the file (NIC i of every host is
// on rail i, and a leaf switch serves one rail for all its hosts).
#pragma once

#include <string>
#include <string_view>

#include "topology/cluster.h"

namespace megascale::topology {

/// The cluster a topology.conf text describes: switches, and hosts in the order the file first names them.
/// Throws std::invalid_argument naming `source` and the line for unknown keys, a switch defined twice, a name
/// in Switches= that is no switch, a switch under two parents, a cycle, a line with both or neither of Nodes=
/// and Switches=, a host listed twice by one switch, or a leaf switch serving different rails.
Cluster parseSlurmTopology(std::string_view text, const std::string& source = "topology.conf");

/// parseSlurmTopology of a file; std::runtime_error naming the path when it cannot be read.
Cluster loadSlurmTopology(const std::string& path);

/// The switch tree back in topology.conf syntax (hosts one by one), so a discovered or merged cluster can be
/// saved and replayed in a test.
std::string toSlurmTopology(const Cluster& cluster);

}  // namespace megascale::topology
