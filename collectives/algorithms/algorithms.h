// What the algorithms' files share: the row type, and step constructors for their builders (each a pure
// function of the spec).
#pragma once

#include "collectives/algorithms/algorithm_row.h"
#include "collectives/schedule.h"

namespace megascale::algorithms {

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
inline Step hostAllReduce(Slice from, Slice to) { return Step{Step::kHostAllReduce, -1, from, {}, to}; }

/// A phase that only copies input to output when they differ in place-ness (skipped by the executor when
/// the pointers are equal).
inline Phase copyPhase(Slice from, Slice to) { return Phase{{}, {copy(from, to)}}; }

/// `a` mod `n` in [0, n), for ring positions that step below zero.
inline int mod(int a, int n) { return ((a % n) + n) % n; }

/// The whole schedule of a one-rank reduction: the result is the input.
inline Schedule singleRankReduction(size_t count) {
  Schedule s;
  s.result = out(0, count);
  s.phases.push_back(copyPhase(in(0, count), out(0, count)));
  return s;
}

}  // namespace megascale::algorithms
