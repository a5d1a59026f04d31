// A torch.distributed Work over one megascale operation. It completes once: from the process group's
// completion thread (so futures, which DDP chains on, complete with nobody waiting) or from a caller's wait()
// (no thread hop on the latency path), whichever sees the operation finished first.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "collectives/work.h"

namespace megascale::pytorch {

/// The megascale operation behind a Work, possibly not issued yet: sends and receives wait in a batch until
/// something needs them (a wait, the next collective), then go out as one group, so that a ring of isend +
/// irecv cannot deadlock on the communicator's in-order queue.
class PendingOp {
 public:
  explicit PendingOp(std::shared_ptr<megascale::Work> work) : work_(std::move(work)) {}
  explicit PendingOp(std::function<void()> flush) : flush_(std::move(flush)) {}

  /// The operation; with flush, issues the batch first if needed, else waits until someone issued it.
  std::shared_ptr<megascale::Work> get(bool flush);
  /// Called once by the flush with the issued operation.
  void issued(std::shared_ptr<megascale::Work> work);

 private:
  std::mutex mutex_;
  std::condition_variable issued_cv_;
  std::shared_ptr<megascale::Work> work_;  // guarded by mutex_; set once
  std::function<void()> flush_;
};

class MegascaleWork : public c10d::Work {
 public:
  /// `outputs` are what result() and the future give; `keep_alive` holds inputs and staging buffers until the
  /// operation is done; `after` (may be empty) runs once it succeeded, before completion (copies out of staging).
  MegascaleWork(int rank, c10d::OpType type, std::shared_ptr<PendingOp> op, std::vector<at::Tensor> outputs,
                std::vector<at::Tensor> keep_alive, std::function<void()> after);

  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  /// Blocks until the megascale operation ends (its own timeout bounds this), then completes this Work. Without
  /// flush (the completion thread) it waits for a batch to be issued by someone else.
  void waitAndComplete(bool flush);

 private:
  void complete();

  std::shared_ptr<PendingOp> op_;
  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> keep_alive_;
  std::function<void()> after_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> completing_{false};
};

}  // namespace megascale::pytorch
