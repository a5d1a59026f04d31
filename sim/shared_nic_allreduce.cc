#include "sim/shared_nic_allreduce.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/host_layout.h"

namespace megascale::sim {

SharedNicAllReduceResult runSharedNicAllReduce(Network& net, const SharedNicAllReduceSpec& spec,
                                               const ControlFactory& control, Picoseconds end) {
  if (spec.ranks_per_host < 2) {
    throw std::invalid_argument("shared-NIC all-reduce: " + std::to_string(spec.ranks_per_host) +
                                " rank(s) per host; it needs 2 or more (one per host is the flat all-reduce)");
  }
  if (!(spec.host_bytes_per_s > 0)) throw std::invalid_argument("shared-NIC all-reduce: the host rate must be positive");
  const int hosts = net.hostCount();
  const HostLayout layout = HostLayout::blocks(hosts, spec.ranks_per_host);
  ScheduleSpec all;
  all.collective = Collective::kAllReduce;
  all.algorithm = Algorithm::kHierarchical;
  // Whole engine blocks: a remainder's chunk would travel between the host's ranks as messages, which this
  // network (one NIC per host) cannot carry inside a host.
  all.count = spec.bytes_per_rank / 4 / static_cast<uint64_t>(spec.ranks_per_host) * static_cast<uint64_t>(spec.ranks_per_host);
  all.nranks = hosts * spec.ranks_per_host;
  all.hosts = &layout;
  all.host_steps = true;
  std::vector<int> rank_hosts(static_cast<size_t>(all.nranks));
  for (int r = 0; r < all.nranks; ++r) rank_hosts[static_cast<size_t>(r)] = layout.host_of[static_cast<size_t>(r)];
  CollectiveReplay replay(net, rank_hosts, all, 4, control);
  replay.setHostBandwidth(spec.host_bytes_per_s);
  SharedNicAllReduceResult r;
  r.run = replay.run(end);
  // A reduce-scatter and an all-gather inside the host, each moving (g - 1) / g of the rank's bytes.
  const double g = spec.ranks_per_host;
  r.host_step_s = 2 * (g - 1) / g * static_cast<double>(spec.bytes_per_rank) / spec.host_bytes_per_s;
  return r;
}

}  // namespace megascale::sim
