#include "collectives/host_stage.h"

#include <string>

namespace megascale {

HostStage::HostStage(std::unique_ptr<node::NodeEngine> engine, std::vector<int> host_ranks, int local)
    : engine_(std::move(engine)), host_ranks_(std::move(host_ranks)), local_(local) {}

HostStage::~HostStage() {
  cancel();
  if (!thread_.joinable()) return;
  thread_.request_stop();
  work_cv_.notify_all();
  thread_.join();
}

Status HostStage::callFor(const Step& step, const void* a_at, void* dst_at, mscDataType_t type, mscRedOp_t op,
                          uint32_t tag, std::function<std::string()> describe, node::NodeCall* call) const {
  const size_t ranks = host_ranks_.size();
  Collective collective = Collective::kAllReduce;
  size_t count = step.a.count;  // the engine's count: per rank for all-gather and reduce-scatter, all for all-reduce
  bool fits = step.a.count == step.dst.count;
  if (step.kind == Step::kHostReduceScatter) {
    collective = Collective::kReduceScatter;
    count = step.dst.count;
    fits = step.a.count == ranks * count;
  } else if (step.kind == Step::kHostAllGather) {
    collective = Collective::kAllGather;
    fits = step.dst.count == ranks * count;
  } else if (step.kind != Step::kHostAllReduce) {
    fits = false;
  }
  if (!fits) {
    return Status(ErrorCode::kInternal, "a shared-memory step's slices do not fit the host's " + std::to_string(ranks) + " ranks");
  }
  *call = node::NodeCall{collective, a_at, dst_at, count, type, op == mscAvg ? mscSum : op, tag, &cancelled_,
                         std::move(describe)};
  return Status::ok();
}

std::string HostStage::describeHost() const {
  std::string text = "ranks";
  for (size_t i = 0; i < host_ranks_.size(); ++i) text += (i == 0 ? " " : ", ") + std::to_string(host_ranks_[i]);
  return text;
}

uint64_t HostStage::start(node::NodeCall call) {
  call.aborted = &cancelled_;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!thread_.joinable()) thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
  queue_.push_back(std::move(call));
  work_cv_.notify_one();
  return ++started_;
}

Status HostStage::runHere(node::NodeCall call) {
  call.aborted = &cancelled_;
  if (failed_.load(std::memory_order_acquire)) return failure();
  return runOne(call);
}

Status HostStage::begin(node::NodeCall call, bool* done) {
  call.aborted = &cancelled_;
  *done = true;
  if (failed_.load(std::memory_order_acquire)) return failure();
  return engineCall([&] {
    const Status status = engine_->begin(call, done);
    begun_ = status.isOk() && !*done;
    return status;
  });
}

Status HostStage::runOne(const node::NodeCall& call) {
  return engineCall([&] {
    const bool begun = begun_;
    begun_ = false;
    return begun ? engine_->resume(call) : engine_->run(call);
  });
}

template <typename Call>
Status HostStage::engineCall(const Call& call) {
  Status status;
  try {
    status = call();
  } catch (const Error& e) {
    status = Status(e.code(), e.what());
  }
  if (status.isOk()) return status;
  engine_->markFailed();
  std::lock_guard<std::mutex> lock(mutex_);
  recordFailure(status);
  return failure_;
}

Status HostStage::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

void HostStage::recordFailure(const Status& status) {
  marked_failed_ = true;
  if (!failure_.isOk()) return;
  failure_ = Status(status.code(), "shared-memory stage among the host's " + describeHost() + ": " + status.message());
  failed_.store(true, std::memory_order_release);
}

bool HostStage::done(uint64_t ticket, Status* status) const {
  if (failed_.load(std::memory_order_acquire)) {
    *status = failure();
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
    if (failure_.isOk()) {
      running_ = true;
      lock.unlock();
      (void)runOne(call);  // a failure is kept in failure_, which done() reports
      lock.lock();
      running_ = false;
    }
    finished_.fetch_add(1, std::memory_order_release);
    idle_cv_.notify_all();
  }
}

}  // namespace megascale
