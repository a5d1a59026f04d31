// The torch.distributed backend "megascale": a c10d::ProcessGroup whose collectives run on a megascale
// Communicator (shared memory on one host, TCP across hosts), built from the store, rank and size torch gives
// a backend's creator. CPU tensors, contiguous, one tensor per call (as Gloo takes them on CPU).
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "collectives/communicator.h"
#include "pytorch/megascale_work.h"

namespace megascale::pytorch {

class ProcessGroupMegascale : public c10d::ProcessGroup {
 public:
  /// Joins the group through `store` (torch's, scoped per group). `timeout` bounds every operation unless
  /// MEGASCALE_TIMEOUT_MS is set. Throws c10::Error naming the rank on failure.
  ProcessGroupMegascale(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                        std::chrono::milliseconds timeout);
  ~ProcessGroupMegascale() override;

  const std::string getBackendName() const override { return "megascale"; }
  /// What took effect: transport, algorithm, node engine.
  std::string description() const { return comm_->description(); }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts = c10d::BroadcastOptions()) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts = c10d::AllreduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts = c10d::ReduceOptions()) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions& opts = c10d::AllgatherOptions()) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts = c10d::ReduceScatterOptions()) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts = c10d::AllToAllOptions()) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts = c10d::BarrierOptions()) override;

 private:
  /// Issues an operation on the communicator after any batched sends and receives (they were posted first).
  template <typename F>
  std::shared_ptr<megascale::Work> issue(const char* op, F&& f);
  /// Wraps an operation in a Work and hands it to the completion thread.
  c10::intrusive_ptr<c10d::Work> track(c10d::OpType type, std::shared_ptr<PendingOp> op,
                                       std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep_alive = {},
                                       std::function<void()> after = {});
  c10::intrusive_ptr<c10d::Work> track(c10d::OpType type, std::shared_ptr<megascale::Work> work,
                                       std::vector<at::Tensor> outputs, std::vector<at::Tensor> keep_alive = {},
                                       std::function<void()> after = {});
  c10::intrusive_ptr<c10d::Work> batchPointToPoint(const Communicator::PointToPoint& op, at::Tensor& tensor,
                                                   c10d::OpType type);
  void flushPointToPoint();
  c10::intrusive_ptr<c10d::Work> bitwiseAllReduce(at::Tensor& tensor, c10d::ReduceOp::RedOpType op);
  void completionLoop(std::stop_token stop);

  std::shared_ptr<Communicator> comm_;
  // Sends and receives not issued yet, as one group (see PendingOp). Lock order: p2p_mutex_ before pending_mutex_.
  std::mutex p2p_mutex_;
  std::vector<Communicator::PointToPoint> p2p_ops_;  // guarded by p2p_mutex_
  std::shared_ptr<PendingOp> p2p_pending_;           // guarded by p2p_mutex_
  // Operations finish in issue order on a communicator, so one thread completes them front to back.
  std::mutex pending_mutex_;
  std::condition_variable_any pending_cv_;
  std::deque<c10::intrusive_ptr<MegascaleWork>> pending_;  // guarded by pending_mutex_
  std::jthread completer_;
};

}  // namespace megascale::pytorch
