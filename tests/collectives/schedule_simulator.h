// Runs every rank's schedule in memory, with FIFO channels between ranks and eager sends, and checks what a
// real network would expose: deadlock, size mismatches, unmatched messages, and data races inside a phase
// (a receive landing where a concurrent send or receive reads or writes).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives/schedule.h"
#include "megascale/megascale.h"

namespace megascale::testing {

struct RankBuffers {
  std::vector<uint8_t> input;   // unused when in place
  std::vector<uint8_t> output;  // holds the input too when in place
};

struct SimulationResult {
  bool ok = true;
  std::string error;  // first problem found, with the rank and phase
  std::vector<std::vector<bool>> heard_from;  // [rank][other]: a message chain from other reached rank
};

/// A rewrite of each rank's schedule before it runs (staging through host memory): the new schedule, and in
/// *extra_count the elements of the buffer kUser it adds.
using ScheduleRewrite = std::function<Schedule(const Schedule&, size_t* extra_count)>;

/// Builds the schedules for spec (rank varies), rewritten by `rewrite` if given, lays out buffers as the executor
/// does for in-place, runs them and leaves the results in buffers[rank].output.
SimulationResult simulate(const ScheduleSpec& spec, mscDataType_t type, mscRedOp_t op, std::vector<RankBuffers>& buffers,
                          const ScheduleRewrite& rewrite = nullptr);

}  // namespace megascale::testing
