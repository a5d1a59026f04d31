#include "collectives/algorithm_choice.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>

#include "collectives/algorithms/registry.h"
#include "collectives/cost_model.h"
#include "collectives/host_layout.h"
#include "collectives/tuning.h"
#include "common/status.h"

namespace megascale {

namespace {

ClusterShape shapeOf(const ScheduleSpec& spec) {
  ClusterShape shape{1, spec.nranks, spec.nranks};
  if (spec.hosts != nullptr && spec.hosts->ranks() == spec.nranks) {
    shape.hosts = spec.hosts->hosts();
    shape.ranks_per_host = spec.hosts->minRanksPerHost();
  }
  return shape;
}

// The table's answer unless its row refuses the size (a hand-edited or foreign table past a row's limit).
std::optional<Algorithm> tuned(const ScheduleSpec& spec, const ClusterShape& shape, size_t bytes) {
  if (spec.collective != Collective::kAllReduce) return std::nullopt;  // the table holds all-reduce only
  const std::optional<Algorithm> answer = tunedAllReduceAlgorithm(shape.hosts, shape.ranks_per_host, bytes);
  const algorithms::AlgorithmRow* row = answer ? algorithms::rowOf(*answer) : nullptr;
  if (row == nullptr || !row->implements(spec.collective) || bytes > row->max_bytes) return std::nullopt;
  return answer;
}

// "all_reduce", "allreduce", "AllReduce" alike.
std::string folded(const std::string& name) {
  std::string out;
  for (char ch : name) {
    if (ch != '_' && ch != '-') out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return out;
}

std::string trimmed(const std::string& s) {
  const size_t begin = s.find_first_not_of(" \t"), end = s.find_last_not_of(" \t");
  return begin == std::string::npos ? "" : s.substr(begin, end - begin + 1);
}

std::string allNames() {
  std::string names = "auto";
  for (const algorithms::AlgorithmRow* row : algorithms::rows()) names += std::string(", ") + row->name;
  return names;
}

[[noreturn]] void refuse(const std::string& text, const std::string& entry, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_ALGO='" + text + "': entry '" + entry + "': " + why);
}

}  // namespace

AlgorithmRequest parseAlgorithmRequest(const std::string& text) {
  AlgorithmRequest request;
  if (!trimmed(text).empty()) request.text = trimmed(text);
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find_first_of(",;", begin), text.size());
    const std::string entry = trimmed(text.substr(begin, end - begin));
    begin = end + 1;
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    const std::string name = trimmed(colon == std::string::npos ? entry : entry.substr(colon + 1));
    Algorithm id;
    if (!parseAlgorithm(name, &id)) refuse(text, entry, "unknown algorithm '" + name + "' (known: " + allNames() + ")");
    const algorithms::AlgorithmRow* row = algorithms::rowOf(id);  // null for auto
    if (colon == std::string::npos) {
      for (size_t c = 0; c < kCollectiveCount; ++c) {
        if (row == nullptr || row->implements(static_cast<Collective>(c))) request.by_collective[c] = id;
      }
      continue;
    }
    const std::string collective = trimmed(entry.substr(0, colon));
    size_t which = kCollectiveCount;
    for (size_t c = 0; c + 1 < kCollectiveCount; ++c) {  // not sendrecv: point-to-point has no algorithm
      if (folded(collective) == folded(collectiveName(static_cast<Collective>(c)))) which = c;
    }
    if (which == kCollectiveCount) refuse(text, entry, "unknown collective '" + collective + "'");
    const Collective c = static_cast<Collective>(which);
    if (row != nullptr && !row->implements(c)) {
      refuse(text, entry, std::string(name) + " does not implement " + collectiveName(c) + " (these do: " +
                              algorithms::namesImplementing(c) + ")");
    }
    request.by_collective[which] = id;
  }
  return request;
}

Algorithm chooseAlgorithm(const ScheduleSpec& spec, size_t dtype_size) {
  if (spec.algorithm != Algorithm::kAuto) return spec.algorithm;
  const Collective c = spec.collective;
  const size_t bytes = spec.count * dtype_size;
  const bool hierarchy_pays = spec.hosts != nullptr && spec.hosts->hierarchical();
  const bool engine_serves_all = spec.host_steps && spec.hosts != nullptr && spec.hosts->hosts() == 1;
  for (const algorithms::AlgorithmRow* row : algorithms::rows()) {
    if (engine_serves_all && row->servesWholeHost(c)) return row->id;
    if (hierarchy_pays && row->implements(c) && bytes >= row->preferred_from_bytes) return row->id;
  }
  const ClusterShape shape = shapeOf(spec);
  if (const std::optional<Algorithm> table = tuned(spec, shape, bytes)) return *table;
  const LinkCosts defaults;
  if (const std::optional<Algorithm> modeled =
          modelAlgorithm(c, shape, spec.links != nullptr ? *spec.links : defaults, spec.count, dtype_size)) {
    return *modeled;
  }
  for (const algorithms::AlgorithmRow* row : algorithms::rows()) {
    if (row->implements(c) && row->servesByDefault(c)) return row->id;
  }
  return Algorithm::kAuto;  // point-to-point groups: no algorithm
}

bool choiceNeedsHostLayout(Collective collective) {
  // Asked per operation; the rows do not change, so the answer per collective is worked out once.
  static const std::array<bool, kCollectiveCount> needs = [] {
    std::array<bool, kCollectiveCount> table{};
    table[static_cast<size_t>(Collective::kAllReduce)] = true;  // the tuning table is per shape
    for (const algorithms::AlgorithmRow* row : algorithms::rows()) {
      for (size_t c = 0; c < kCollectiveCount; ++c) {
        const Collective collective = static_cast<Collective>(c);
        if (row->implements(collective) && (row->priced(collective) || row->preferred_from_bytes != SIZE_MAX ||
                                            row->servesWholeHost(collective))) {
          table[c] = true;
        }
      }
    }
    return table;
  }();
  return needs[static_cast<size_t>(collective)];
}

bool someRowServesWholeHost(Collective collective) {
  static const std::array<bool, kCollectiveCount> serves = [] {
    std::array<bool, kCollectiveCount> table{};
    for (const algorithms::AlgorithmRow* row : algorithms::rows()) {
      for (size_t c = 0; c < kCollectiveCount; ++c) table[c] = table[c] || row->servesWholeHost(static_cast<Collective>(c));
    }
    return table;
  }();
  return serves[static_cast<size_t>(collective)];
}

}  // namespace megascale
