// What a job's links cost, in the alpha-beta model's terms: a message costs the link's latency plus its bytes
// over the link's rate. The algorithms price themselves with these (each row's cost, algorithm_row.h), the
// cost model compares the prices (cost_model.h), and the ranks agree on one network link (agreedNetwork).
#pragma once

#include <cstdint>
#include <vector>

namespace megascale {

struct LinkCost {
  double latency_s = 0;    // per message, including the wait for its completion
  double bytes_per_s = 0;  // per direction
  /// The sender's own time per message (posting it: a system call, a doorbell), paid one after another when a
  /// rank sends many messages in one phase; the latency above overlaps across them, this does not.
  double send_overhead_s = 0;

  /// One message of `bytes` over this link.
  double transfer(double bytes) const { return latency_s + bytes / bytes_per_s; }
};

/// The links of a job: inside a host (shared memory) and between hosts (one NIC per rank); and a rank's own
/// memory, where a schedule's local copies run.
struct LinkCosts {
  LinkCost local{1e-6, 10e9, 0.2e-6};     // shm: a few microseconds per hand-off, memory-copy rate
  LinkCost network{20e-6, 1.25e9, 2e-6};  // 10 Gbit/s TCP, as the tcp transport reports itself; a send() each
  LinkCost memory{1e-6, 10e9, 0};         // a copy step: the executor's hand-off (about a local message's), memcpy
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
  /// A flat algorithm's phase waits for its slowest pair: across hosts some pair always crosses the network.
  const LinkCost& flatLink(const LinkCosts& links) const { return hosts > 1 ? links.network : links.local; }
};

}  // namespace megascale
