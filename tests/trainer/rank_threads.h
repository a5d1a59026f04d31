// Ranks as threads for the trainer's parallel tests: one real communicator per thread over the loopback
// store of a LocalJob, each thread with one OpenMP thread so that several ranks share the cores fairly.
#pragma once

#include <omp.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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
  std::mutex mutex;
  std::exception_ptr failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      omp_set_num_threads(1);
      try {
        body(r, Communicator::create(job.id, r, n, rankOptions()));
      } catch (...) {
        std::lock_guard lock(mutex);
        if (!failure) failure = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace megascale::trainer::testing
