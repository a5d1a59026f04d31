#include "trainer/monitor/stragglers.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace megascale::trainer {

namespace {

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  const size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return (upper + *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

}  // namespace

std::vector<Straggler> StragglerReport::slow(double threshold) const {
  std::vector<Straggler> out;
  for (const Straggler& s : ranks) {
    if (s.ratio >= threshold) out.push_back(s);
  }
  return out;
}

StragglerReport findStragglers(const StragglerInput& input) {
  StragglerReport report;
  std::map<int, std::vector<double>> group_medians;
  std::vector<double> medians;
  for (size_t r = 0; r < input.compute_s.size(); ++r) {
    medians.push_back(median(input.compute_s[r]));
    const int group = r < input.peer_group.size() ? input.peer_group[r] : 0;
    group_medians[group].push_back(medians.back());
  }
  for (size_t r = 0; r < medians.size(); ++r) {
    const int group = r < input.peer_group.size() ? input.peer_group[r] : 0;
    Straggler s;
    s.rank = static_cast<int>(r);
    s.median_s = medians[r];
    s.peers_median_s = median(group_medians[group]);
    s.ratio = s.peers_median_s > 0 ? s.median_s / s.peers_median_s : 1;
    report.ranks.push_back(s);
  }
  std::stable_sort(report.ranks.begin(), report.ranks.end(),
                   [](const Straggler& a, const Straggler& b) { return a.ratio > b.ratio; });
  return report;
}

std::string heatmapCsv(const StragglerInput& input) {
  std::string csv = "rank,step,compute_ms\n";
  char line[64];
  for (size_t r = 0; r < input.compute_s.size(); ++r) {
    for (size_t s = 0; s < input.compute_s[r].size(); ++s) {
      std::snprintf(line, sizeof(line), "%zu,%zu,%.3f\n", r, s, input.compute_s[r][s] * 1e3);
      csv += line;
    }
  }
  return csv;
}

std::string describeStragglers(const StragglerInput& input, const StragglerReport& report, size_t count) {
  std::string text;
  char line[256];
  for (size_t i = 0; i < report.ranks.size() && i < count; ++i) {
    const Straggler& s = report.ranks[i];
    const std::string name = static_cast<size_t>(s.rank) < input.names.size() ? input.names[static_cast<size_t>(s.rank)]
                                                                               : "rank " + std::to_string(s.rank);
    std::snprintf(line, sizeof(line), "%s: %.1f ms per step, %.2fx its peers' %.1f ms\n", name.c_str(), s.median_s * 1e3,
                  s.ratio, s.peers_median_s * 1e3);
    text += line;
  }
  return text;
}

}  // namespace megascale::trainer
