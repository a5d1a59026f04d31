#include "collectives/work.h"

namespace megascale {

bool Work::test() const { return done_.load(std::memory_order_acquire); }

Status Work::wait(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!done_cv_.wait_for(lock, timeout, [&] { return done_.load(std::memory_order_relaxed); })) {
    return Status(ErrorCode::kTimeout, "operation still running after " + std::to_string(timeout.count()) + " ms");
  }
  return status_;
}

Status Work::status() const {
  if (done_.load(std::memory_order_acquire)) return status_;  // final: no lock on the fast path
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::chrono::steady_clock::time_point Work::finishedAt() const {
  if (done_.load(std::memory_order_acquire)) return finished_at_;
  return {};
}

void Work::finish(Status status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = std::move(status);
    finished_at_ = std::chrono::steady_clock::now();
    done_.store(true, std::memory_order_release);
  }
  done_cv_.notify_all();
}

}  // namespace megascale
