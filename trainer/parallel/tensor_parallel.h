// The sequence-parallel collectives of one tensor-parallel group, the model's RowSharding over a communicator.
// Outside the tensor-parallel regions every activation is sharded along its token rows (batch x sequence,
// flattened): rank r holds rows [r*R, r*R + R) of the full [T*R, C] tensor, so LayerNorm, residual adds, the
// embedding and the loss run on 1/T of the tokens. An all-gather restores the full rows before a column-parallel GEMM; a reduce-scatter sums the
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
#include "trainer/model/sharding.h"
#include "trainer/monitor/timeline.h"

namespace megascale::trainer {

class TensorParallelGroup final : public RowSharding {
 public:
  /// comm: the group's communicator (TP ranks in rank order). Throws std::invalid_argument for chunks < 1.
  TensorParallelGroup(std::shared_ptr<Communicator> comm, int chunks, std::chrono::milliseconds timeout);

  int size() const override { return comm_->size(); }
  int rank() const override { return comm_->rank(); }
  int chunks() const { return chunks_; }
  Communicator& communicator() { return *comm_; }
  /// Where waits and collectives are timed (may be null).
  void setTimeline(Timeline* timeline) { timeline_ = timeline; }

  void allGather(float* full, int64_t rows_per_rank, int64_t cols, const RowsFn& consume) override;

  /// Each chunk is sent while the next is computed. With one rank, produce writes straight into shard (after
  /// base is copied in): no extra pass.
  PendingRows reduceScatter(float* shard, const float* base, int64_t rows_per_rank, int64_t cols,
                            const ProduceFn& produce) override;

  void allReduce(float* data, int64_t count) override;

 private:
  class ChunkedReduceScatter;  // the PendingRows of reduceScatter
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
