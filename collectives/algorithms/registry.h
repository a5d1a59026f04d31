// The algorithm rows (algorithm_row.h), and what follows from them: names, lookups, building a schedule.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "collectives/algorithms/algorithm_row.h"

namespace megascale {

namespace algorithms {

/// Every row, in registry order (the cost model breaks exact ties by it).
std::span<const AlgorithmRow* const> rows();
/// nullptr for kAuto and for an id no row has.
const AlgorithmRow* rowOf(Algorithm id);
/// nullptr for a name no row has.
const AlgorithmRow* rowNamed(std::string_view name);
/// nullptr if the algorithm does not implement the collective.
Builder builderFor(Collective collective, Algorithm algorithm);
/// "ring, pring, ..." of the rows implementing `collective`, for error texts.
std::string namesImplementing(Collective collective);

}  // namespace algorithms

const char* algorithmName(Algorithm a);  // "auto" for kAuto
bool parseAlgorithm(const std::string& name, Algorithm* a);

/// Builds one rank's schedule. spec.algorithm must not be kAuto (choose first: algorithm_choice.h).
/// Throws Error(kInvalidArgument) for an algorithm that does not implement the collective.
Schedule buildSchedule(const ScheduleSpec& spec);

}  // namespace megascale
