// Rails: a rail-optimized server (MegaScale §3.6) has one NIC per rail, each rail a network of its own, and its
// local rank i drives NIC i. A host looks like that when it has several selected NICs, each on an IPv4 subnet
// of its own, all at the same speed; then local rank l listens on rail (l mod rails), so the traffic of a
// hierarchical collective's ring b stays on rail b. Hosts with one NIC (or NICs that do not look like rails,
// e.g. a management port beside a data port of another speed) are left alone.
#pragma once

#include <string>
#include <vector>

#include "topology/net_interfaces.h"

namespace megascale::topology {

/// Puts NICs in rail order: by PCI function (servers number their rails that way), virtual NICs by name.
void sortIntoRails(std::vector<NetInterface>& nics);

/// The NICs selected by `spec` in rail order when they look like rails (see above); empty otherwise.
std::vector<NetInterface> railInterfaces(const std::string& spec);

/// The IPv4 address local rank `local_rank` should listen on: its rail's; "" when the host has no rails or
/// the local rank is unknown (< 0).
std::string railAddress(int local_rank, const std::string& spec);

}  // namespace megascale::topology
