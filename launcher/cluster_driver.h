// The driver of a job that spans hosts: a thread of the first executor that joins (launcher/host_executor.h).
// It talks to every host's executor only through the job's store (launcher/executor_protocol.h): it waits for
// the executors, assigns host slots and spares, reads every executor's report each heartbeat, runs the fault
// detector over all ranks of the job, and notices executors that stop answering. On a fault it tells every
// executor to stop its ranks (and to self-check), evicts hosts that are lost or fail their self-check, moves a
// spare into each evicted slot, and starts the next attempt; with no spare left, or no restart left, it ends the
// job with a report. One log line per decision: what, which rank and host, why, how long it took.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <memory>
#include <thread>

#include "bootstrap/unique_id.h"

namespace megascale::launcher {

struct ClusterOptions {
  int nproc = 1;         // ranks per host
  int world_size = 1;    // a multiple of nproc: world_size / nproc host slots
  int spare_hosts = 0;   // executors to wait for beyond the slots
  int max_restarts = 0;
  bool self_check = false;
  std::chrono::milliseconds heartbeat{500};
  std::chrono::milliseconds hang_timeout{0};
  std::chrono::milliseconds stopped_timeout{0};  // a rank stopped by a signal hangs after this (0: hang_timeout)
  std::chrono::milliseconds host_timeout{10000};  // an executor silent this long is lost
  std::chrono::milliseconds join_timeout{300000};
  std::chrono::milliseconds stop_timeout{3000};   // the executors' grace period
  std::chrono::milliseconds self_check_timeout{120000};
  uint64_t link_check_bytes = uint64_t{8} << 20;  // each host's probe to the next in the link check
  /// The switch tree (Slurm topology.conf; --topology, MEGASCALE_TOPO_FILE): slots follow it ("": join order).
  std::string topology_file;
};

class ClusterDriver {
 public:
  /// Starts driving in a thread of its own.
  ClusterDriver(ClusterOptions options, UniqueId id, std::FILE* log);
  ~ClusterDriver();  // waits for the job's end
  ClusterDriver(const ClusterDriver&) = delete;
  ClusterDriver& operator=(const ClusterDriver&) = delete;

  /// Waits up to `limit` for the driver to have ended the job; true once it has.
  bool finished(std::chrono::milliseconds limit);

 private:
  struct State;
  void run();
  void drive();
  std::mutex mutex_;
  std::condition_variable ended_;
  bool finished_ = false;
  std::unique_ptr<State> state_;
  std::thread thread_;
};

}  // namespace megascale::launcher
