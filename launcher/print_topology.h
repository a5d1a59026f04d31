// megascale-run --print-topology: the cluster model a job would see. Each megascale-run publishes a host
// record for every rank it would start (under the job's store when there is one, so every host's
// megascale-run prints the whole cluster), merges them into the topology file's switch tree and prints it.
#pragma once

#include <chrono>
#include <string>

#include "bootstrap/unique_id.h"

namespace megascale::launcher {

struct TopologyQuery {
  int nproc = 1;                  // ranks this host would start
  int world_size = 1;             // ranks over all hosts
  int rank_offset = 0;            // global rank of this host's first rank
  std::string topology_file;      // Slurm topology.conf; "" for none
  const UniqueId* store = nullptr;  // the shared store when hosts are several; null for this host alone
  std::chrono::milliseconds timeout{0};
};

/// The cluster's description (Cluster::describe). Throws megascale::Error or std::exception naming the file,
/// the rank whose record is bad or missing at the timeout.
std::string describeCluster(const TopologyQuery& query);

}  // namespace megascale::launcher
