// Schedule builders, one file per algorithm family. Each is a pure function of the spec.
#pragma once

#include "collectives/schedule.h"

namespace megascale::algorithms {

using Builder = Schedule (*)(const ScheduleSpec&);

/// nullptr if the algorithm does not implement the collective.
Builder builderFor(Collective collective, Algorithm algorithm);

Schedule ringAllReduce(const ScheduleSpec& spec);
Schedule pipelinedRingAllReduce(const ScheduleSpec& spec);
Schedule ringAllGather(const ScheduleSpec& spec);
Schedule ringReduceScatter(const ScheduleSpec& spec);
Schedule halvingDoublingAllReduce(const ScheduleSpec& spec);
Schedule directAllReduce(const ScheduleSpec& spec);
Schedule doubleTreeAllReduce(const ScheduleSpec& spec);
/// The double tree's shape, for the cost model: chunks per half of `half_count` elements, deepest node's depth.
size_t doubleTreeChunks(size_t half_count);
int doubleTreeDepth(int nranks);
Schedule treeBroadcast(const ScheduleSpec& spec);
Schedule treeReduce(const ScheduleSpec& spec);
Schedule pairwiseAllToAll(const ScheduleSpec& spec);
Schedule disseminationBarrier(const ScheduleSpec& spec);
Schedule hierarchicalAllReduce(const ScheduleSpec& spec);  // spec.hosts must be set
Schedule hierarchicalAllGather(const ScheduleSpec& spec);
Schedule hierarchicalReduceScatter(const ScheduleSpec& spec);

/// The largest power of two <= n (n >= 1): halving-doubling's participants, the double tree's shape.
int largestPowerOfTwoAtMost(int n);

// Step constructors shared by the builders.
inline Slice in(size_t offset, size_t count) { return Slice{kInput, offset, count}; }
inline Slice out(size_t offset, size_t count) { return Slice{kOutput, offset, count}; }
inline Slice scratch(size_t offset, size_t count) { return Slice{kScratch, offset, count}; }
inline Step send(int peer, Slice s) { return Step{Step::kSend, peer, s, {}, {}}; }
inline Step recv(int peer, Slice s) { return Step{Step::kRecv, peer, {}, {}, s}; }
inline Step copy(Slice from, Slice to) { return Step{Step::kCopy, -1, from, {}, to}; }
inline Step reduce(Slice a, Slice b, Slice to) { return Step{Step::kReduce, -1, a, b, to}; }
inline Step hostReduceScatter(Slice from, Slice to) { return Step{Step::kHostReduceScatter, -1, from, {}, to}; }
inline Step hostAllGather(Slice from, Slice to) { return Step{Step::kHostAllGather, -1, from, {}, to}; }

/// A phase that only copies input to output when they differ in place-ness (skipped by the executor when
/// the pointers are equal).
inline Phase copyPhase(Slice from, Slice to) { return Phase{{}, {copy(from, to)}}; }

/// The whole schedule of a one-rank reduction: the result is the input.
inline Schedule singleRankReduction(size_t count) {
  Schedule s;
  s.result = out(0, count);
  s.phases.push_back(copyPhase(in(0, count), out(0, count)));
  return s;
}

}  // namespace megascale::algorithms
