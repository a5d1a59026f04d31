// What the model asks of tensor (sequence) parallelism, and no more: the collectives over its tensor-parallel
// ranks, in the shapes the model uses. Outside the tensor-parallel regions every activation is sharded along its
// token rows: rank r holds rows [r*R, r*R + R) of the full [size*R, C] tensor. The model sees this interface,
// never a communicator; trainer/parallel/tensor_parallel.h implements it over one.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace megascale::trainer {

class RowSharding {
 public:
  /// Rows [first, first + count) of the full tensor.
  using RowsFn = std::function<void(int64_t first, int64_t count)>;
  /// Writes (+=) rows [first, first + count) of this rank's partial result into dst (count x cols, packed).
  using ProduceFn = std::function<void(int64_t first, int64_t count, float* dst)>;

  /// A reduce-scatter whose last pieces may still be moving. finish() waits for them (and throws what failed);
  /// destroying one unfinished lets the pieces land first, since they read memory the sharding owns.
  class PendingRows {
   public:
    struct State {
      virtual ~State() = default;
      virtual void finish() = 0;
    };
    PendingRows() = default;  // nothing to wait for
    explicit PendingRows(std::unique_ptr<State> state) : state_(std::move(state)) {}
    void finish() {
      if (state_) state_->finish();
    }

   private:
    std::unique_ptr<State> state_;
  };

  virtual ~RowSharding() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  /// full [size*R, cols] holds this rank's shard in rows [rank*R, rank*R + R) on entry; fills every other
  /// rank's rows and calls consume on each run of rows as soon as it is in place (this rank's own rows first).
  virtual void allGather(float* full, int64_t rows_per_rank, int64_t cols, const RowsFn& consume) = 0;
  /// Starts shard [R, cols] = base (null: zero) + the sum over ranks of their partial rows [rank*R, rank*R + R);
  /// this rank's partial tensor is produced piece by piece through `produce`.
  virtual PendingRows reduceScatter(float* shard, const float* base, int64_t rows_per_rank, int64_t cols,
                                    const ProduceFn& produce) = 0;
  /// data (count floats) = sum over ranks, in place.
  virtual void allReduce(float* data, int64_t count) = 0;
};

}  // namespace megascale::trainer
