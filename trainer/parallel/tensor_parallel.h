// The sequence-parallel collectives of one tensor-parallel group. Outside the tensor-parallel regions every
// activation is sharded along its token rows (batch x sequence, flattened): rank r holds rows [r*R, r*R + R)
// of the full [T*R, C] tensor, so LayerNorm, residual adds, the embedding and the loss run on 1/T of the
// tokens. An all-gather restores the full rows before a column-parallel GEMM; a reduce-scatter sums the
// row-parallel GEMM's partial outputs back into shards.
//
// Both are cut into `chunks` pieces and pipelined with the GEMMs that use them: the GEMM of chunk j runs
// while chunk j+1 moves (MegaScale fuses communication into the GEMM kernel; on CPUs the chunked pipeline
// over the library's own queue is the means). chunks = 1 switches the overlap off.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "trainer/monitor/timeline.h"

namespace megascale::trainer {

class TensorParallelGroup {
 public:
  /// comm: the group's communicator (TP ranks in rank order). Throws std::invalid_argument for chunks < 1.
  TensorParallelGroup(std::shared_ptr<Communicator> comm, int chunks, std::chrono::milliseconds timeout);

  int size() const { return comm_->size(); }
  int rank() const { return comm_->rank(); }
  int chunks() const { return chunks_; }
  Communicator& communicator() { return *comm_; }
  /// Where waits and collectives are timed (may be null).
  void setTimeline(Timeline* timeline) { timeline_ = timeline; }

  /// Rows [first, first + count) of the full tensor.
  using RowsFn = std::function<void(int64_t first, int64_t count)>;
  /// Writes (+=) rows [first, first + count) of this rank's partial result into dst (count x cols, packed).
  using ProduceFn = std::function<void(int64_t first, int64_t count, float* dst)>;

  /// full [size*R, cols] holds this rank's shard in rows [rank*R, rank*R + R) on entry; fills every other
  /// rank's rows and calls consume on each run of rows as soon as it is in place (this rank's own rows first).
  void allGather(float* full, int64_t rows_per_rank, int64_t cols, const RowsFn& consume);

  /// A reduce-scatter whose last chunks may still be moving; finish() waits for them.
  class PendingReduceScatter {
   public:
    /// shard = base (may alias shard, or be null for zero) + the sum over ranks. Throws on failure.
    void finish();
    /// One that has nothing left to wait for.
    static PendingReduceScatter done() {
      PendingReduceScatter pending;
      pending.finished_ = true;
      return pending;
    }
    PendingReduceScatter(PendingReduceScatter&&) = default;
    ~PendingReduceScatter();

   private:
    friend class TensorParallelGroup;
    PendingReduceScatter() = default;
    TensorParallelGroup* group_ = nullptr;
    std::vector<std::shared_ptr<Work>> works_;
    Timeline::Clock::time_point issued_;
    int64_t bytes_ = 0;
    float* shard_ = nullptr;
    const float* base_ = nullptr;
    int64_t count_ = 0;
    bool finished_ = false;
  };

  /// Starts shard [R, cols] = base + sum over ranks of their partial rows [rank*R, rank*R + R); this rank's
  /// partial tensor is produced chunk by chunk through `produce`, each chunk sent while the next is computed.
  /// With one rank, produce writes straight into shard (after base is copied in): no extra pass.
  PendingReduceScatter reduceScatter(float* shard, const float* base, int64_t rows_per_rank, int64_t cols,
                                     const ProduceFn& produce);

  /// data (count floats) = sum over ranks, in place.
  void allReduce(float* data, int64_t count);

 private:
  void wait(const std::shared_ptr<Work>& work, const char* what, Timeline::Clock::time_point issued, int64_t bytes);
  // [begin, end) rows of a rank's shard in chunk j.
  int64_t chunkBegin(int64_t rows_per_rank, int64_t j) const;

  std::shared_ptr<Communicator> comm_;
  int chunks_;
  std::chrono::milliseconds timeout_;
  std::vector<float> gather_scratch_, scatter_scratch_;
  Timeline* timeline_ = nullptr;
};

}  // namespace megascale::trainer
