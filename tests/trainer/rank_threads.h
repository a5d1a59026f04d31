// Ranks as threads for the trainer's parallel tests: one real communicator per thread over the loopback
// store of a LocalJob, each thread with one OpenMP thread so that several ranks share the cores fairly.
#pragma once

#include <omp.h>

#include <chrono>
#include <functional>
#include <memory>

#include "collectives/communicator.h"
#include "local_job.h"

namespace megascale::trainer::testing {

inline CommunicatorOptions rankOptions(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  CommunicatorOptions o;
  o.timeout = timeout;
  o.transport = "tcp";  // loopback sockets: no shared-memory segments left behind by a failed test
  o.node_engine = false;
  o.transport_options.handshake_timeout_ms = static_cast<int>(timeout.count());
  return o;
}

/// Runs body(rank, communicator) on n threads and rethrows the first exception any of them threw.
inline void runRanks(int n, const std::function<void(int, std::shared_ptr<Communicator>)>& body) {
  test_support::LocalJob job;
  job.runRanks(n, rankOptions(), [&](int r, const std::shared_ptr<Communicator>& comm) {
    omp_set_num_threads(1);
    body(r, comm);
  });
}

}  // namespace megascale::trainer::testing
