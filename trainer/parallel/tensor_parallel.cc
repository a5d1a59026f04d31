#include "trainer/parallel/tensor_parallel.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace megascale::trainer {

TensorParallelGroup::TensorParallelGroup(std::shared_ptr<Communicator> comm, int chunks,
                                         std::chrono::milliseconds timeout)
    : comm_(std::move(comm)), chunks_(chunks), timeout_(timeout) {
  if (!comm_) throw std::invalid_argument("TensorParallelGroup needs a communicator");
  if (chunks < 1) throw std::invalid_argument("tensor-parallel chunks must be at least 1 (got " +
                                              std::to_string(chunks) + ")");
}

int64_t TensorParallelGroup::chunkBegin(int64_t rows_per_rank, int64_t j) const {
  const int64_t k = std::min<int64_t>(chunks_, rows_per_rank);
  return rows_per_rank * j / k;
}

void TensorParallelGroup::wait(const std::shared_ptr<Work>& work, const char* what,
                               Timeline::Clock::time_point issued, int64_t bytes) {
  const auto t0 = Timeline::Clock::now();
  const Status status = work->wait(timeout_);
  if (timeline_ != nullptr) {
    timeline_->waitSpan(Wait::kTensorParallel, t0, Timeline::Clock::now());
    timeline_->communicationSpan(Wait::kTensorParallel, what, issued, work->finishedAt(), bytes);
  }
  if (!status.isOk()) {
    throw Error(status.code(), std::string("tensor-parallel ") + what + " (rank " + std::to_string(rank()) + " of " +
                                   std::to_string(size()) + "): " + status.message());
  }
}

void TensorParallelGroup::allGather(float* full, int64_t rows_per_rank, int64_t cols, const RowsFn& consume) {
  const int64_t n = size(), me = rank(), r_rows = rows_per_rank;
  if (n == 1) return consume(0, r_rows);
  const int64_t k = std::min<int64_t>(chunks_, r_rows);
  gather_scratch_.resize(static_cast<size_t>(n * r_rows * cols));
  std::vector<std::shared_ptr<Work>> works;
  const auto issued = Timeline::Clock::now();
  for (int64_t j = 0; j < k; ++j) {
    const int64_t b = chunkBegin(r_rows, j), c = chunkBegin(r_rows, j + 1) - b;
    works.push_back(comm_->allGather(full + (me * r_rows + b) * cols, gather_scratch_.data() + n * b * cols,
                                     static_cast<size_t>(c * cols), mscFloat32));
  }
  consume(me * r_rows, r_rows);  // this rank's rows are already here: compute on them while the rest moves
  for (int64_t j = 0; j < k; ++j) {
    const int64_t b = chunkBegin(r_rows, j), c = chunkBegin(r_rows, j + 1) - b;
    wait(works[static_cast<size_t>(j)], "all-gather", issued,
         static_cast<int64_t>((n - 1) * c * cols * static_cast<int64_t>(sizeof(float))));
    for (int64_t r = 0; r < n; ++r) {
      if (r == me) continue;
      std::memcpy(full + (r * r_rows + b) * cols, gather_scratch_.data() + (n * b + r * c) * cols,
                  static_cast<size_t>(c * cols) * sizeof(float));
      consume(r * r_rows + b, c);
    }
  }
}

// The chunks of one reduce-scatter in flight: finish() waits for them and adds the base.
class TensorParallelGroup::ChunkedReduceScatter final : public RowSharding::PendingRows::State {
 public:
  ChunkedReduceScatter(TensorParallelGroup& group, float* shard, const float* base, int64_t count, int64_t bytes)
      : group_(group), issued_(Timeline::Clock::now()), bytes_(bytes), shard_(shard), base_(base), count_(count) {}

  void add(std::shared_ptr<Work> work) { works_.push_back(std::move(work)); }

  void finish() override {
    if (finished_) return;
    finished_ = true;
    const int64_t each = works_.empty() ? 0 : bytes_ / static_cast<int64_t>(works_.size());
    for (const auto& work : works_) group_.wait(work, "reduce-scatter", issued_, each);
    if (base_ == nullptr) return;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < count_; ++i) shard_[i] += base_[i];
  }

  ~ChunkedReduceScatter() override {
    // An exception unwound past finish(): the chunks still read scratch the group owns, so let them land.
    if (finished_) return;
    for (const auto& work : works_) (void)work->wait(group_.timeout_);
  }

 private:
  TensorParallelGroup& group_;
  std::vector<std::shared_ptr<Work>> works_;
  Timeline::Clock::time_point issued_;
  int64_t bytes_;
  float* shard_;
  const float* base_;
  int64_t count_;
  bool finished_ = false;
};

RowSharding::PendingRows TensorParallelGroup::reduceScatter(float* shard, const float* base, int64_t rows_per_rank,
                                                            int64_t cols, const ProduceFn& produce) {
  const int64_t n = size(), r_rows = rows_per_rank, count = r_rows * cols;
  if (n == 1) {
    if (base == nullptr) std::fill_n(shard, count, 0.0f);
    else if (base != shard) std::copy(base, base + count, shard);
    produce(0, r_rows, shard);
    return PendingRows();
  }
  if (base == shard) throw std::invalid_argument("reduce-scatter: base must not alias the shard");
  auto pending = std::make_unique<ChunkedReduceScatter>(*this, shard, base, count,
                                                        (n - 1) * count * static_cast<int64_t>(sizeof(float)));
  const int64_t k = std::min<int64_t>(chunks_, r_rows);
  scatter_scratch_.resize(static_cast<size_t>(n * count));
  for (int64_t j = 0; j < k; ++j) {
    const int64_t b = chunkBegin(r_rows, j), c = chunkBegin(r_rows, j + 1) - b;
    float* region = scatter_scratch_.data() + n * b * cols;  // [rank][c rows][cols]: one chunk's send buffer
    std::fill_n(region, n * c * cols, 0.0f);
    for (int64_t r = 0; r < n; ++r) produce(r * r_rows + b, c, region + r * c * cols);
    pending->add(comm_->reduceScatter(region, shard + b * cols, static_cast<size_t>(c * cols), mscFloat32, mscSum));
  }
  return PendingRows(std::move(pending));
}

void TensorParallelGroup::allReduce(float* data, int64_t count) {
  if (size() == 1) return;
  const auto issued = Timeline::Clock::now();
  wait(comm_->allReduce(data, data, static_cast<size_t>(count), mscFloat32, mscSum), "all-reduce", issued,
       2 * (size() - 1) * count * static_cast<int64_t>(sizeof(float)) / size());
}

}  // namespace megascale::trainer
