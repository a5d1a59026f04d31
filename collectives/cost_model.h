// What an all-reduce costs on a cluster of a given shape, in the alpha-beta model: a message costs the link's
// latency plus its bytes over the link's rate, and a phase of a schedule waits for its slowest link. Why: the
// tuning table holds measurements of the shapes it was made on; on any other shape (thousands of ranks, hosts
// with another number of ranks, other links) the choice follows from the link rates instead of from a 2-core
// VM's table. The formulas follow our own schedules (collectives/algorithms), phase by phase.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/schedule.h"

namespace megascale {

struct LinkCost {
  double latency_s = 0;    // per message, including the wait for its completion
  double bytes_per_s = 0;  // per direction
  /// The sender's own time per message (posting it: a system call, a doorbell), paid one after another when a
  /// rank sends many messages in one phase; the latency above overlaps across them, this does not.
  double send_overhead_s = 0;
};

/// The links of a job: inside a host (shared memory) and between hosts (one NIC per rank).
struct LinkCosts {
  LinkCost local{1e-6, 10e9, 0.2e-6};     // shm: a few microseconds per hand-off, memory-copy rate
  LinkCost network{20e-6, 1.25e9, 2e-6};  // 10 Gbit/s TCP, as the tcp transport reports itself; a send() each
};

/// One rank's network link as it travels in an exchange: the ranks of a communicator must choose the same
/// algorithm, so each reports what it sees and all take the slowest (agreedNetwork).
struct LinkReport {
  uint64_t bytes_per_s = 0;
  uint64_t latency_ns = 0;
  static LinkReport of(const LinkCost& link);
};
/// The lowest rate and the highest latency reported.
LinkCost agreedNetwork(const std::vector<LinkReport>& reports);

struct ClusterShape {
  int hosts = 1;
  int ranks_per_host = 1;  // the fewest any host has (the hierarchy's owners per host)
  int ranks = 1;
};

/// Predicted seconds of an all-reduce of `count` elements of `dtype_size` bytes with `algorithm`; infinity for an
/// algorithm that does not fit (hierarchical on one host or one rank per host, direct above kDirectMaxBytes or kDirectMaxPeers).
double allReduceSeconds(Algorithm algorithm, const ClusterShape& shape, const LinkCosts& links, size_t count,
                        size_t dtype_size);

/// The peers one rank of `nranks` exchanges with in an all-reduce by `algorithm`: its connections.
int allReducePeers(Algorithm algorithm, int nranks);

/// The cheapest flat all-reduce algorithm by allReduceSeconds (ring, halving-doubling, direct, double tree); among
/// those within kNearTie of the cheapest, the one with the fewest peers (allReducePeers): connections cost setup
/// time, memory and NIC queue pairs that one operation's time does not show, and at thousands of ranks an 8-byte
/// all-reduce costs the tree and halving-doubling the same 2 log2(n) latencies. Where hosts share ranks, chooseAlgorithm takes the hierarchical one by its measured size rule before asking. The
/// pipelined ring is left to measurement (the tuning table): what it gains, reductions hidden behind transfers,
/// is compute the model does not price.
constexpr double kNearTie = 0.05;
Algorithm modelAllReduceAlgorithm(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size);

}  // namespace megascale
