#include "sim/topology.h"

#include <stdexcept>

namespace megascale::sim {

FatTree buildFatTree(Network& net, int k, const LinkSpec& links) {
  if (k < 2 || k % 2 != 0) throw std::invalid_argument("fat tree: k must be even and >= 2");
  FatTree t;
  t.k = k;
  const int half = k / 2;
  for (int c = 0; c < half * half; ++c) t.cores.push_back(net.addSwitch());
  for (int pod = 0; pod < k; ++pod) {
    std::vector<int> pod_edges, pod_aggs;
    for (int i = 0; i < half; ++i) pod_edges.push_back(net.addSwitch());
    for (int i = 0; i < half; ++i) pod_aggs.push_back(net.addSwitch());
    for (int e : pod_edges) {
      for (int h = 0; h < half; ++h) net.connect(net.hostNode(net.addHost()), e, links.host_bps, links.delay);
      for (int a : pod_aggs) net.connect(e, a, links.fabric_bps, links.delay);
    }
    for (int i = 0; i < half; ++i) {  // aggregation i of every pod reaches cores i*half .. i*half + half - 1
      for (int j = 0; j < half; ++j) net.connect(pod_aggs[i], t.cores[i * half + j], links.fabric_bps, links.delay);
    }
    t.edges.insert(t.edges.end(), pod_edges.begin(), pod_edges.end());
    t.aggregations.insert(t.aggregations.end(), pod_aggs.begin(), pod_aggs.end());
  }
  net.computeRoutes();
  return t;
}

RailOptimized buildRailOptimized(Network& net, const RailSpec& spec) {
  if (spec.servers < 1 || spec.rails < 1 || spec.servers_per_group < 1 || spec.servers % spec.servers_per_group != 0 ||
      spec.aggregations_per_rail < 1 || spec.tor_uplinks_per_aggregation < 1 || spec.cores < 0 ||
      spec.aggregation_uplinks_per_core < 1) {
    throw std::invalid_argument("rail-optimized topology: servers must be a multiple of servers_per_group, counts >= 1");
  }
  RailOptimized t;
  const int groups = spec.servers / spec.servers_per_group;
  std::vector<int> host_node(static_cast<size_t>(spec.servers * spec.rails));
  for (int h = 0; h < spec.servers * spec.rails; ++h) host_node[static_cast<size_t>(h)] = net.hostNode(net.addHost());
  for (int r = 0; r < spec.rails; ++r) {
    for (int a = 0; a < spec.aggregations_per_rail; ++a) t.aggregations.push_back(net.addSwitch());
  }
  for (int c = 0; c < spec.cores; ++c) t.cores.push_back(net.addSwitch());
  for (int g = 0; g < groups; ++g) {
    for (int r = 0; r < spec.rails; ++r) {
      const int tor = net.addSwitch();
      t.tors.push_back(tor);
      for (int s = g * spec.servers_per_group; s < (g + 1) * spec.servers_per_group; ++s) {
        net.connect(host_node[static_cast<size_t>(s * spec.rails + r)], tor, spec.host_bps, spec.delay);
      }
      for (int a = 0; a < spec.aggregations_per_rail; ++a) {
        for (int l = 0; l < spec.tor_uplinks_per_aggregation; ++l) {
          net.connect(tor, t.aggregations[static_cast<size_t>(r * spec.aggregations_per_rail + a)], spec.fabric_bps,
                      spec.delay);
        }
      }
    }
  }
  for (int agg : t.aggregations) {
    for (int core : t.cores) {
      for (int l = 0; l < spec.aggregation_uplinks_per_core; ++l) net.connect(agg, core, spec.fabric_bps, spec.delay);
    }
  }
  net.computeRoutes();
  return t;
}

double railOversubscription(const RailSpec& spec) {
  return spec.servers_per_group * spec.host_bps /
         (spec.aggregations_per_rail * spec.tor_uplinks_per_aggregation * spec.fabric_bps);
}

int buildStar(Network& net, int hosts, const LinkSpec& links) {
  const int s = net.addSwitch();
  const double uplink_bps = links.uplink_bps > 0 ? links.uplink_bps : links.host_bps;
  for (int h = 0; h < hosts; ++h) net.connect(net.hostNode(net.addHost()), s, uplink_bps, links.host_bps, links.delay);
  net.computeRoutes();
  return s;
}

}  // namespace megascale::sim
