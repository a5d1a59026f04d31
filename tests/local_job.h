// A job of ranks-as-threads: a fresh unique id and the embedded store server on loopback, for the tests that
// build communicators inside one process, and the one way those tests run their ranks.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/tcp_store_server.h"
#include "collectives/communicator.h"

namespace megascale::test_support {

struct LocalJob {
  LocalJob() { server = startLoopbackStore(&id); }

  using RankBody = std::function<void(int rank, const std::shared_ptr<Communicator>& comm)>;
  /// Runs body(rank, communicator) on n threads, each with its own communicator of this job made with
  /// `options`; after every thread has joined, rethrows the first exception one of them threw.
  void runRanks(int n, const CommunicatorOptions& options, const RankBody& body) const {
    std::mutex mutex;
    std::exception_ptr failure;
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        try {
          body(r, Communicator::create(id, r, n, options));
        } catch (...) {
          std::lock_guard lock(mutex);
          if (!failure) failure = std::current_exception();
        }
      });
    }
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
  }

  UniqueId id;
  std::unique_ptr<TcpStoreServer> server;
};

}  // namespace megascale::test_support
