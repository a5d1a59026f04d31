// A handle on one queued operation: test() polls, wait(timeout) blocks, status() tells how it ended.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/status.h"

namespace megascale {

class Work {
 public:
  /// True once the operation has finished, successfully or not.
  bool test() const;
  /// Waits up to timeout. Returns the operation's status, or kTimeout if it is still running.
  Status wait(std::chrono::milliseconds timeout) const;
  /// The final status; ok while still running.
  Status status() const;
  /// When the operation finished (steady clock); the epoch while it runs. Profilers draw the operation
  /// from its issue to here.
  std::chrono::steady_clock::time_point finishedAt() const;

  void finish(Status status);  // called once by the communicator's worker

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable done_cv_;
  std::atomic<bool> done_{false};  // set (release) after status_; status_ never changes once done_ is seen
  Status status_;
  std::chrono::steady_clock::time_point finished_at_{};  // set with status_
};

}  // namespace megascale
