// The self-checks of megascale-selfcheck (and of the driver's --self-check): what MegaScale runs on suspect hosts
// before it lets them back into a job. Each check measures one thing and says pass or fail with the figure:
// - GEMM: exact on integer-valued operands (every backend and summation order gives the same float result, so
//   any wrong element is a fault), and its rate;
// - an all-reduce over the host's ranks, exact, and its bus bandwidth;
// - send/recv between neighbouring hosts (a ring of one rank per host), exact, and its bandwidth.
// A rank or link much slower than its peers is flagged by the caller (slowerThanPeers).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "collectives/communicator.h"

namespace megascale::launcher {

struct CheckResult {
  bool pass = false;
  double figure = 0;   // GFLOP/s or GB/s
  std::string detail;  // what was checked, or what was wrong
};

/// C = A B on `size` x `size` x `size` integer-valued floats with the trainer's GEMM backend, repeated for about
/// `seconds`: every element checked exactly (row sums against A (B 1), plus sampled elements).
CheckResult checkGemm(int64_t size, double seconds);

/// An all-reduce of `bytes` over `host` (this host's ranks), repeated `repeats` times; exact and its bus
/// bandwidth (GB/s).
CheckResult checkAllReduce(Communicator& host, size_t bytes, int repeats, std::chrono::milliseconds timeout);

/// Over `ring` (one rank per host): each sends `bytes` to the next and receives from the one before, `repeats`
/// times; exact, and the rate this rank received at (GB/s), i.e. of the link from the previous host.
CheckResult checkNeighbourLink(Communicator& ring, size_t bytes, int repeats, std::chrono::milliseconds timeout);

/// The indices whose figure is below `fraction` of the median of all figures: much slower than their peers.
std::vector<size_t> slowerThanPeers(const std::vector<double>& figures, double fraction);

}  // namespace megascale::launcher
