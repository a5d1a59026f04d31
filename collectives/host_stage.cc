#include "collectives/host_stage.h"

#include <string>

namespace megascale {

HostStage::HostStage(std::unique_ptr<node::NodeEngine> engine, std::vector<int> host_ranks, int local)
    : engine_(std::move(engine)), host_ranks_(std::move(host_ranks)), local_(local) {
  thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
}

HostStage::~HostStage() {
  cancel();
  thread_.request_stop();
  work_cv_.notify_all();
  thread_.join();
}

std::string HostStage::describeHost() const {
  std::string text = "ranks";
  for (size_t i = 0; i < host_ranks_.size(); ++i) text += (i == 0 ? " " : ", ") + std::to_string(host_ranks_[i]);
  return text;
}

uint64_t HostStage::start(node::NodeCall call) {
  call.aborted = &cancelled_;
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.push_back(std::move(call));
  work_cv_.notify_one();
  return ++started_;
}

bool HostStage::done(uint64_t ticket, Status* status) const {
  if (failed_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mutex_);
    *status = failure_;
    return true;
  }
  return finished_.load(std::memory_order_acquire) >= ticket;
}

void HostStage::cancel() {
  cancelled_.store(true);
  engine_->interrupt();
}

void HostStage::stopAndWait() {
  cancel();
  std::unique_lock<std::mutex> lock(mutex_);
  queue_.clear();
  idle_cv_.wait(lock, [&] { return !running_; });
  // The thread is idle, so this thread may mark the engine failed (the engine's rule: the thread that ran it).
  if (!marked_failed_) {
    marked_failed_ = true;
    engine_->markFailed();
  }
}

void HostStage::loop(std::stop_token stop) {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_cv_.wait(lock, stop, [&] { return !queue_.empty(); });
    if (stop.stop_requested()) return;
    node::NodeCall call = std::move(queue_.front());
    queue_.pop_front();
    Status status = failure_;
    if (status.isOk()) {
      running_ = true;
      lock.unlock();
      try {
        status = engine_->run(call);
      } catch (const Error& e) {
        status = Status(e.code(), e.what());
      }
      if (!status.isOk()) engine_->markFailed();
      lock.lock();
      running_ = false;
      if (!status.isOk() && failure_.isOk()) {
        failure_ = Status(status.code(), "shared-memory stage among the host's " + describeHost() + ": " + status.message());
        marked_failed_ = true;
        failed_.store(true, std::memory_order_release);
      }
    }
    finished_.fetch_add(1, std::memory_order_release);
    idle_cv_.notify_all();
  }
}

}  // namespace megascale
