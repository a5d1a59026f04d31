#include "sim/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>

namespace megascale::sim {

SizeDistribution::SizeDistribution(std::vector<std::pair<double, double>> points) {
  if (points.size() < 2 || points.front().second != 0 || points.back().second != 100) {
    throw std::invalid_argument("size distribution: the CDF must start at 0% and end at 100%");
  }
  for (size_t i = 1; i < points.size(); ++i) {
    if (points[i].first < points[i - 1].first || points[i].second < points[i - 1].second) {
      throw std::invalid_argument("size distribution: sizes and percents must not decrease (point " +
                                  std::to_string(i) + ")");
    }
  }
  for (auto& [bytes, percent] : points) points_.emplace_back(bytes, percent / 100);
}

// The CDF points of the HPCC repository's traffic_gen/*_distribution.txt (bytes, percent).
SizeDistribution SizeDistribution::webSearch() {
  return SizeDistribution({{0, 0}, {10000, 15}, {20000, 20}, {30000, 30}, {50000, 40}, {80000, 53}, {200000, 60},
                           {1000000, 70}, {2000000, 80}, {5000000, 90}, {10000000, 97}, {30000000, 100}});
}

SizeDistribution SizeDistribution::fbHadoop() {
  return SizeDistribution({{0, 0}, {100, 1}, {200, 2}, {300, 5}, {350, 15}, {400, 20}, {500, 30}, {600, 40},
                           {700, 50}, {1000, 60}, {2000, 67}, {7000, 70}, {30000, 72}, {50000, 82}, {80000, 87},
                           {120000, 90}, {300000, 95}, {1000000, 97.5}, {2000000, 99}, {10000000, 100}});
}

uint64_t SizeDistribution::sample(double u) const {
  auto it = std::upper_bound(points_.begin(), points_.end(), u,
                             [](double value, const auto& point) { return value < point.second; });
  if (it == points_.end()) return static_cast<uint64_t>(points_.back().first);
  const auto& hi = *it;
  const auto& lo = *(it - 1);
  const double t = hi.second > lo.second ? (u - lo.second) / (hi.second - lo.second) : 0;
  return std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(lo.first + t * (hi.first - lo.first))));
}

double SizeDistribution::mean() const {
  double mean = 0;
  for (size_t i = 1; i < points_.size(); ++i) {
    mean += (points_[i].second - points_[i - 1].second) * (points_[i].first + points_[i - 1].first) / 2;
  }
  return mean;
}

std::vector<FlowSpec> permutation(int hosts, uint64_t bytes, uint64_t seed, Picoseconds start) {
  std::vector<int> to(static_cast<size_t>(hosts));
  std::iota(to.begin(), to.end(), 0);
  std::mt19937_64 rng(seed);
  // Sattolo's shuffle: a single cycle through all hosts, so nobody sends to itself.
  for (int i = hosts - 1; i > 0; --i) {
    std::uniform_int_distribution<int> pick(0, i - 1);
    std::swap(to[static_cast<size_t>(i)], to[static_cast<size_t>(pick(rng))]);
  }
  std::vector<FlowSpec> flows;
  for (int h = 0; h < hosts && hosts > 1; ++h) flows.push_back({h, to[static_cast<size_t>(h)], bytes, start});
  return flows;
}

std::vector<FlowSpec> incast(const std::vector<int>& senders, int receiver, uint64_t bytes, Picoseconds start) {
  std::vector<FlowSpec> flows;
  for (int s : senders) {
    if (s != receiver) flows.push_back({s, receiver, bytes, start});
  }
  return flows;
}

std::vector<FlowSpec> allToAll(int hosts, uint64_t bytes, Picoseconds start) {
  std::vector<FlowSpec> flows;
  for (int s = 0; s < hosts; ++s) {
    for (int d = 0; d < hosts; ++d) {
      if (s != d) flows.push_back({s, d, bytes, start});
    }
  }
  return flows;
}

std::vector<FlowSpec> poissonLoad(int hosts, const SizeDistribution& sizes, double load, double host_bps,
                                  Picoseconds duration, uint64_t seed) {
  if (hosts < 2 || load <= 0) return {};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uniform(0, 1);
  const double mean_gap_ps = sizes.mean() * 8 / (host_bps * load) * 1e12;
  std::exponential_distribution<double> gap(1 / mean_gap_ps);
  std::vector<FlowSpec> flows;
  for (int src = 0; src < hosts; ++src) {
    std::uniform_int_distribution<int> other(0, hosts - 2);
    for (double t = gap(rng); t < static_cast<double>(duration); t += gap(rng)) {
      int dst = other(rng);
      if (dst >= src) ++dst;
      flows.push_back({src, dst, sizes.sample(uniform(rng)), static_cast<Picoseconds>(t)});
    }
  }
  std::stable_sort(flows.begin(), flows.end(), [](const FlowSpec& a, const FlowSpec& b) { return a.start < b.start; });
  return flows;
}

std::vector<FlowSpec> readFlowFile(std::istream& in, int hosts) {
  std::vector<FlowSpec> flows;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    long long src, dst;
    double bytes, start_us;
    std::string extra;
    if (!(fields >> src)) continue;  // blank or comment-only
    auto fail = [&](const std::string& why) {
      throw std::runtime_error("flow file line " + std::to_string(number) + ": " + why + " (expected \"src dst bytes start_us\")");
    };
    if (!(fields >> dst >> bytes >> start_us)) fail("too few fields");
    if (fields >> extra) fail("unexpected '" + extra + "'");
    if (src < 0 || src >= hosts || dst < 0 || dst >= hosts) fail("host outside 0.." + std::to_string(hosts - 1));
    if (src == dst) fail("a flow from a host to itself");
    if (!(bytes >= 1) || bytes > 1e15 || bytes != std::floor(bytes)) fail("bytes must be a whole number >= 1");
    if (!(start_us >= 0) || start_us > 1e12) fail("start must be >= 0 microseconds");
    flows.push_back({static_cast<int>(src), static_cast<int>(dst), static_cast<uint64_t>(bytes),
                     static_cast<Picoseconds>(std::llround(start_us * 1e6))});
  }
  return flows;
}

void writeFlowFile(std::ostream& out, const std::vector<FlowSpec>& flows) {
  out << "# src dst bytes start_us\n";
  char line[128];
  for (const FlowSpec& f : flows) {
    std::snprintf(line, sizeof(line), "%d %d %llu %.6f\n", f.src, f.dst, static_cast<unsigned long long>(f.bytes),
                  static_cast<double>(f.start) / 1e6);
    out << line;
  }
}

}  // namespace megascale::sim
