#include "launcher/print_topology.h"

#include <vector>

#include "bootstrap/store.h"
#include "topology/host_record.h"
#include "topology/net_interfaces.h"
#include "topology/slurm_topology.h"

namespace megascale::launcher {

std::string describeCluster(const TopologyQuery& query) {
  topology::Cluster cluster;
  if (!query.topology_file.empty()) cluster = topology::loadSlurmTopology(query.topology_file);
  const std::string interfaces = topology::configuredInterfaceSpec();
  std::vector<topology::HostRecord> records;
  if (query.store == nullptr) {
    for (int local = 0; local < query.nproc; ++local) {
      records.push_back(topology::discoverHostRecord(query.rank_offset + local, interfaces));
    }
  } else {
    const std::string who = "megascale-run --print-topology (ranks " + std::to_string(query.rank_offset) + ".." +
                            std::to_string(query.rank_offset + query.nproc - 1) + ")";
    std::unique_ptr<Store> store = connectStore(*query.store, who, query.timeout);
    for (int local = 0; local < query.nproc; ++local) {
      const int rank = query.rank_offset + local;
      store->set("topology/rank/" + std::to_string(rank),
                 topology::encodeHostRecord(topology::discoverHostRecord(rank, interfaces)));
    }
    for (int rank = 0; rank < query.world_size; ++rank) {
      const std::string key = "topology/rank/" + std::to_string(rank);
      records.push_back(topology::decodeHostRecord(store->get(key, query.timeout), "rank " + std::to_string(rank)));
      if (records.back().rank != rank) {
        throw std::invalid_argument("the host record under " + key + " claims rank " + std::to_string(records.back().rank));
      }
    }
  }
  topology::mergeHostRecords(cluster, records);
  return cluster.describe();
}

}  // namespace megascale::launcher
