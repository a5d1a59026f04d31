#include "pytorch/megascale_work.h"

#include <ATen/core/ivalue.h>

#include <stdexcept>

namespace megascale::pytorch {

std::shared_ptr<megascale::Work> PendingOp::get(bool flush) {
  {
    std::lock_guard lock(mutex_);
    if (work_) return work_;
  }
  if (flush && flush_) flush_();
  std::unique_lock lock(mutex_);
  issued_cv_.wait(lock, [&] { return work_ != nullptr; });
  return work_;
}

void PendingOp::issued(std::shared_ptr<megascale::Work> work) {
  {
    std::lock_guard lock(mutex_);
    work_ = std::move(work);
  }
  issued_cv_.notify_all();
}

MegascaleWork::MegascaleWork(int rank, c10d::OpType type, std::shared_ptr<PendingOp> op,
                             std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep_alive,
                             std::function<void()> after)
    : c10d::Work(rank, type),
      op_(std::move(op)),
      outputs_(std::move(outputs)),
      keep_alive_(std::move(keep_alive)),
      after_(std::move(after)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

bool MegascaleWork::isCompleted() {
  if (!c10d::Work::isCompleted() && op_->get(true)->test()) complete();
  return c10d::Work::isCompleted();
}

bool MegascaleWork::wait(std::chrono::milliseconds timeout) {
  if (!c10d::Work::isCompleted()) {
    if (timeout == kNoTimeout) {
      waitAndComplete(true);
    } else if (const auto work = op_->get(true); work->wait(timeout).code() != ErrorCode::kTimeout || work->test()) {
      complete();
    }
  }
  return c10d::Work::wait(timeout);  // rethrows the operation's error; waits for a completion in progress
}

void MegascaleWork::waitAndComplete(bool flush) {
  const auto work = op_->get(flush);
  while (!work->test()) (void)work->wait(std::chrono::seconds(1));  // the status is read once done
  complete();
}

void MegascaleWork::complete() {
  if (completing_.exchange(true)) return;  // the other side completes it; c10d::Work::wait waits for that
  Status status = op_->get(false)->status();
  std::exception_ptr error;
  if (status.isOk() && after_) {
    try {
      after_();
    } catch (const std::exception& e) {
      error = std::make_exception_ptr(std::runtime_error(std::string("megascale: ") + e.what()));
    }
  }
  if (!status.isOk()) error = std::make_exception_ptr(std::runtime_error("megascale: " + status.message()));
  keep_alive_.clear();
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

}  // namespace megascale::pytorch
