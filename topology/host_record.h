// What one rank knows about its host, as it publishes it for the others: the host's name, the rank, and the
// host's NICs in rail order. Records from every rank merged into a topology.conf's switch tree make the
// cluster model (cluster.h). The encoding is a few lines of text, checked field by field on decoding, since
// the bytes come from the network.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topology/cluster.h"

namespace megascale::topology {

struct HostRecord {
  std::string host;
  int rank = -1;
  std::vector<Nic> nics;  // rail order
};

/// MEGASCALE_HOST_NAME, else SLURMD_NODENAME, else the kernel's host name (network namespaces share the
/// kernel's, so emulated hosts set MEGASCALE_HOST_NAME).
std::string thisHostName();

/// This host as `rank` sees it: its name and the interfaces selected by `interface_spec` (NCCL_SOCKET_IFNAME
/// syntax), loopback left out unless it is all there is, ordered by PCI function then name: NIC i is rail i.
HostRecord discoverHostRecord(int rank, const std::string& interface_spec);

std::string encodeHostRecord(const HostRecord& record);
/// Throws std::invalid_argument naming `from` for anything that is not a record encodeHostRecord writes:
/// unknown lines, names with spaces or control characters, more than 64 NICs, numbers out of range.
HostRecord decodeHostRecord(std::string_view bytes, const std::string& from);

/// Adds each record's rank to its host (a host the file does not name is appended, with no switch) and sets
/// the host's NICs. Throws std::invalid_argument when two ranks of one host report different NICs, or one
/// rank appears twice.
void mergeHostRecords(Cluster& cluster, const std::vector<HostRecord>& records);

}  // namespace megascale::topology
