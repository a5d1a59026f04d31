#include "trainer/parallel/tensor_parallel.h"

#include <gtest/gtest.h>

#include <vector>

#include "trainer/rank_threads.h"

namespace megascale::trainer {
namespace {

using namespace std::chrono_literals;

// Row r, column c of rank k's shard holds k * 1000 + r * 10 + c (rows counted within the full tensor).
float value(int64_t row, int64_t col) { return static_cast<float>(row * 10 + col); }

TEST(TensorParallelGroup, AllGatherFillsEveryRowAndConsumesEachOnce) {
  for (int ranks : {1, 2, 3}) {
    for (int chunks : {1, 2, 5}) {
      const int64_t rows = 4, cols = 3;
      testing::runRanks(ranks, [&](int rank, std::shared_ptr<Communicator> comm) {
        TensorParallelGroup group(comm, chunks, 30s);
        std::vector<float> full(static_cast<size_t>(ranks * rows * cols), -1.0f);
        for (int64_t r = rank * rows; r < (rank + 1) * rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) full[static_cast<size_t>(r * cols + c)] = value(r, c);
        }
        std::vector<int> seen(static_cast<size_t>(ranks * rows), 0);
        bool own_first = false;
        group.allGather(full.data(), rows, cols, [&](int64_t first, int64_t count) {
          if (first == rank * rows && count == rows && std::count(seen.begin(), seen.end(), 1) == 0) own_first = true;
          for (int64_t r = first; r < first + count; ++r) {
            ++seen[static_cast<size_t>(r)];
            for (int64_t c = 0; c < cols; ++c) EXPECT_EQ(full[static_cast<size_t>(r * cols + c)], value(r, c));
          }
        });
        EXPECT_TRUE(own_first) << "this rank's rows are consumed before any other's";
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), ranks * rows);
      });
    }
  }
}

TEST(TensorParallelGroup, ReduceScatterSumsEveryRanksPartialOntoTheBase) {
  for (int ranks : {1, 2, 4}) {
    for (int chunks : {1, 3}) {
      const int64_t rows = 5, cols = 2;
      testing::runRanks(ranks, [&](int rank, std::shared_ptr<Communicator> comm) {
        TensorParallelGroup group(comm, chunks, 30s);
        std::vector<float> base(static_cast<size_t>(rows * cols), 0.5f), shard(base.size(), -7.0f);
        auto pending = group.reduceScatter(shard.data(), base.data(), rows, cols, [&](int64_t first, int64_t count,
                                                                                       float* dst) {
          for (int64_t r = 0; r < count; ++r) {
            for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] += value(first + r, c) * static_cast<float>(rank + 1);
          }
        });
        pending.finish();
        const float weight = static_cast<float>(ranks * (ranks + 1) / 2);  // sum of (rank + 1)
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) {
            EXPECT_EQ(shard[static_cast<size_t>(r * cols + c)], 0.5f + weight * value(rank * rows + r, c));
          }
        }
      });
    }
  }
}

TEST(TensorParallelGroup, APeerThatNeverComesTimesOutNamingTheOperation) {
  test_support::LocalJob job;
  auto options = testing::rankOptions(1s);
  auto comm = Communicator::create(job.id, 0, 2, options);
  TensorParallelGroup group(comm, 1, 1s);
  std::vector<float> data(8, 1.0f);
  try {
    group.allReduce(data.data(), 8);
    FAIL() << "all-reduce with an absent peer returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor-parallel all-reduce (rank 0 of 2)"), std::string::npos) << e.what();
  }
  EXPECT_THROW(TensorParallelGroup(comm, 0, 1s), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::trainer
