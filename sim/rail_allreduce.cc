#include "sim/rail_allreduce.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "collectives/algorithm_choice.h"
#include "collectives/host_layout.h"

namespace megascale::sim {

RailAllReduceResult runRailAllReduce(Network& net, const RailAllReduceSpec& spec, const ControlFactory& control,
                                     Picoseconds end) {
  if (spec.rails < 1 || net.hostCount() % spec.rails != 0) {
    throw std::invalid_argument("rail all-reduce: " + std::to_string(net.hostCount()) + " hosts are not servers of " +
                                std::to_string(spec.rails) + " rails");
  }
  std::vector<std::vector<int>> rails(static_cast<size_t>(spec.rails));
  for (int h = 0; h < net.hostCount(); ++h) rails[static_cast<size_t>(h % spec.rails)].push_back(h);
  ScheduleSpec across;
  across.collective = Collective::kAllReduce;
  across.count = spec.bytes_per_gpu / 4 / static_cast<uint64_t>(spec.rails);  // this GPU's shard after NVLink
  across.nranks = static_cast<int>(rails[0].size());
  across.algorithm = spec.algorithm;
  // The library's choice for one rank per server on these links (every rail's ring crosses the network).
  const HostLayout servers = HostLayout::blocks(across.nranks, 1);
  LinkCosts links;
  links.network = spec.network;
  across.hosts = &servers;
  across.links = &links;
  across.algorithm = chooseAlgorithm(across, 4);
  across.hosts = nullptr;
  across.links = nullptr;
  RailAllReduceResult r;
  r.algorithm = across.algorithm;
  r.network = CollectiveReplay(net, rails, across, 4, control).run(end);
  const double g = spec.rails;
  r.nvlink_s = 2 * (g - 1) / g * static_cast<double>(spec.bytes_per_gpu) / spec.nvlink_bytes_per_s;
  r.step_s = std::max(static_cast<double>(r.network.time) / 1e12, r.nvlink_s);
  ScheduleSpec whole = across;
  whole.count = spec.bytes_per_gpu / 4;
  whole.nranks = net.hostCount();
  double algbw = 0;
  collectiveBandwidth(whole, 4, r.step_s, &algbw, &r.busbw_gbs);
  return r;
}

}  // namespace megascale::sim
