// A host's megascale-run in a job that spans hosts and restarts: the executor. It joins the job through the
// store, starts its ranks in the host slot the driver gives it (or waits as a spare), reports their heartbeats
// every --heartbeat-ms, and obeys the driver: stop (kill the hung ranks, give the others the grace period,
// self-check), run again in a slot (after fetching the slot's checkpoints from another host's replica when it
// takes over), end. It keeps the host's checkpoints in memory across restarts and pushes a replica of them to
// the executor of the next slot. An executor that cannot reach the store, or hears nothing from the driver, for
// --host-timeout stops its ranks and exits (fenced): no rank of an evicted host lives on. The first executor
// to join also runs the job's driver (launcher/cluster_driver.h).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "launcher/cluster_driver.h"

namespace megascale::launcher {

struct ExecutorOptions {
  ClusterOptions cluster;      // nproc, world size, timeouts; the driver's options where this one drives
  int preferred_slot = -1;     // from --rank-offset
  std::vector<std::string> program;
  UniqueId id;
  std::string self_check_program;  // empty: none
};

/// Runs this host's part of the job to its end; returns megascale-run's exit code. A signal in
/// `*forward_signal` is passed to this host's ranks and ends the job everywhere.
int runHostExecutor(const ExecutorOptions& options, std::FILE* log, volatile int* forward_signal);

}  // namespace megascale::launcher
