#include "congestion/sim/topology.h"

#include <stdexcept>

namespace megascale::congestion::sim {

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

int buildStar(Network& net, int hosts, const LinkSpec& links) {
  const int s = net.addSwitch();
  for (int h = 0; h < hosts; ++h) net.connect(net.hostNode(net.addHost()), s, links.host_bps, links.delay);
  net.computeRoutes();
  return s;
}

}  // namespace megascale::congestion::sim
