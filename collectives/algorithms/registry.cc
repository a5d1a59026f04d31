#include "collectives/algorithms/registry.h"

#include <algorithm>
#include <iterator>

#include "common/status.h"

namespace megascale {

namespace algorithms {

// Every algorithm, one entry each; its file defines `const AlgorithmRow& <entry>Row()`.
#define MEGASCALE_ALGORITHMS(X) \
  X(ring) X(pipelinedRing) X(halvingDoubling) X(direct) X(doubleTree) X(tree) X(pairwise) X(bruck) \
  X(dissemination) X(hierarchical)

#define MEGASCALE_DECLARE_ROW(entry) const AlgorithmRow& entry##Row();
MEGASCALE_ALGORITHMS(MEGASCALE_DECLARE_ROW)
#undef MEGASCALE_DECLARE_ROW

std::span<const AlgorithmRow* const> rows() {
#define MEGASCALE_ROW_ADDRESS(entry) &entry##Row(),
  static const AlgorithmRow* const all[] = {MEGASCALE_ALGORITHMS(MEGASCALE_ROW_ADDRESS)};
#undef MEGASCALE_ROW_ADDRESS
  return {std::begin(all), std::end(all)};
}

const AlgorithmRow* rowOf(Algorithm id) {
  for (const AlgorithmRow* row : rows()) {
    if (row->id == id) return row;
  }
  return nullptr;
}

const AlgorithmRow* rowNamed(std::string_view name) {
  for (const AlgorithmRow* row : rows()) {
    if (name == row->name) return row;
  }
  return nullptr;
}

Builder builderFor(Collective collective, Algorithm algorithm) {
  const AlgorithmRow* row = rowOf(algorithm);
  return row != nullptr ? row->builder(collective) : nullptr;
}

std::string namesImplementing(Collective collective) {
  std::string names;
  for (const AlgorithmRow* row : rows()) {
    if (row->implements(collective)) names += (names.empty() ? "" : ", ") + std::string(row->name);
  }
  return names;
}

int largestPowerOfTwoAtMost(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int log2Ceiling(int n) {
  int rounds = 0;
  for (int reach = 1; reach < n; reach *= 2) ++rounds;
  return rounds;
}

}  // namespace algorithms

const char* algorithmName(Algorithm a) {
  if (a == Algorithm::kAuto) return "auto";
  const algorithms::AlgorithmRow* row = algorithms::rowOf(a);
  return row != nullptr ? row->name : "unknown";
}

bool parseAlgorithm(const std::string& name, Algorithm* a) {
  if (name == "auto") {
    *a = Algorithm::kAuto;
    return true;
  }
  const algorithms::AlgorithmRow* row = algorithms::rowNamed(name);
  if (row != nullptr) *a = row->id;
  return row != nullptr;
}

Schedule buildSchedule(const ScheduleSpec& spec) {
  if (spec.nranks < 1 || spec.rank < 0 || spec.rank >= spec.nranks) {
    throw Error(ErrorCode::kInvalidArgument, "schedule: rank " + std::to_string(spec.rank) + " of " +
                                                 std::to_string(spec.nranks) + " is out of range");
  }
  const algorithms::Builder build = algorithms::builderFor(spec.collective, spec.algorithm);
  if (build == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, std::string("algorithm '") + algorithmName(spec.algorithm) +
                                                 "' does not implement " + collectiveName(spec.collective) +
                                                 " (these do: " + algorithms::namesImplementing(spec.collective) +
                                                 ")");
  }
  return build(spec);
}

}  // namespace megascale
