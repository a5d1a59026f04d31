// The 3D-parallel step against the single-process trainer (the oracle): same model, batch, data and seed;
// ranks as threads over real communicators. Per-step losses within 1e-5 (relative) and final weights within
// 1e-4, for tensor, pipeline (plain and interleaved) and data parallelism alone and together, AdamW and LAMB,
// overlap on and off.
#include "trainer/parallel/parallel_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "trainer/kernels/bf16.h"
#include "trainer/model_configs.h"
#include "trainer/rank_threads.h"

namespace megascale::trainer {
namespace {

struct Case {
  const char* name;
  int world, tp, pp, virtual_stages, micro_batches;
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  bool overlap = true;
  int micro_batch_group = 0;
};

constexpr int kSteps = 3;
constexpr int64_t kBatch = 4;

ModelConfig model() { return testing::modelConfig(4, 16, 4, 8, 29); }

std::vector<int32_t> batchTokens(int step, int shift) {
  std::vector<int32_t> out(static_cast<size_t>(kBatch * model().seq_len));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>((i * 13 + i * i * 3 + step * 7 + shift) % 29);
  return out;
}

OptimizerConfig optimizerConfig(OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.clip_norm = 0.5;  // low enough to clip: the global norm must be right
  return c;
}

double lr(int step) { return 1e-3 * (step + 1); }

// The single-process trainer: kSteps steps from seed 17; returns the per-step losses.
std::vector<double> trainTheOracle(Gpt<float>& whole, OptimizerKind kind) {
  whole.initialize(17);
  Optimizer<float> optimizer(optimizerConfig(kind), whole.parameterTable());
  std::vector<double> losses;
  for (int s = 0; s < kSteps; ++s) {
    const auto in = batchTokens(s, 0), target = batchTokens(s, 1);
    whole.zeroGradients();
    losses.push_back(whole.forward(in.data(), target.data(), kBatch));
    whole.backward();
    clipGradientNorm(whole.gradients(), whole.parameterCount(), optimizerConfig(kind).clip_norm);
    optimizer.step(whole.parameters(), whole.gradients(), lr(s));
  }
  return losses;
}

class ParallelTrainerTest : public ::testing::TestWithParam<Case> {};

TEST_P(ParallelTrainerTest, MatchesTheSingleProcessTrainer) {
  const Case c = GetParam();
  Gpt<float> whole(model());
  const std::vector<double> want = trainTheOracle(whole, c.optimizer);

  std::mutex mutex;
  std::map<std::string, std::vector<float>> weights;  // whole tensors assembled from every rank's shards
  std::vector<std::vector<double>> losses(static_cast<size_t>(c.world));
  testing::runRanks(c.world, [&](int rank, std::shared_ptr<Communicator> world) {
    ParallelConfig p;
    p.tp = c.tp;
    p.pp = c.pp;
    p.virtual_stages = c.virtual_stages;
    p.micro_batches = c.micro_batches;
    p.micro_batch_group = c.micro_batch_group;
    p.overlap_tp = p.overlap_pp = p.overlap_dp = c.overlap;
    p.tp_chunks = 2;
    p.bucket_elements = 1500;  // several buckets per chunk
    p.timeout = std::chrono::seconds(60);
    ParallelTrainer trainer(model(), optimizerConfig(c.optimizer), p, kBatch, world, 17, Precision::kFp32);
    for (int s = 0; s < kSteps; ++s) {
      const auto in = batchTokens(s, 0), target = batchTokens(s, 1);
      losses[static_cast<size_t>(rank)].push_back(trainer.step(in.data(), target.data(), lr(s)).loss);
    }
    trainer.optimizer().synchronizeParameters();
    std::lock_guard lock(mutex);
    for (const auto& chunk : trainer.chunks()) {
      for (const auto& spec : chunk->parameterTable()) {
        auto& w = weights[spec.name];
        std::vector<float> mine(static_cast<size_t>(globalSize(spec)));
        if (!w.empty()) mine = w;  // other TP ranks' slices
        copyShardToGlobal(spec, chunk->parameters() + spec.offset, mine.data());
        // The tied embedding's copies on the first and last stage (and every replica) stay identical.
        if (spec.layout.shard_dim < 0 && !w.empty()) {
          EXPECT_EQ(std::memcmp(mine.data(), w.data(), w.size() * sizeof(float)), 0) << spec.name << " on rank " << rank;
        }
        w = std::move(mine);
      }
    }
  });
  for (int r = 0; r < c.world; ++r) {
    ASSERT_EQ(losses[static_cast<size_t>(r)].size(), static_cast<size_t>(kSteps));
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_NEAR(losses[static_cast<size_t>(r)][static_cast<size_t>(s)], want[static_cast<size_t>(s)],
                  1e-5 * want[static_cast<size_t>(s)])
          << "rank " << r << " step " << s;
    }
  }
  for (const auto& spec : whole.parameterTable()) {
    ASSERT_TRUE(weights.count(spec.name)) << spec.name;
    const auto& got = weights[spec.name];
    double worst = 0;
    for (int64_t i = 0; i < spec.size(); ++i) {
      worst = std::max(worst, std::fabs(double(got[static_cast<size_t>(i)]) - whole.parameters()[spec.offset + i]));
    }
    EXPECT_LT(worst, 1e-4) << spec.name;
  }
}

// bf16 data-parallel traffic: every rank computes with the bf16 values of the fp32 master weights, the masters
// keep their low bits, and the training follows the fp32 oracle to bf16's precision.
TEST(ParallelTrainerBf16Traffic, RanksHoldTheBf16ValuesOfExactMasterWeights) {
  Gpt<float> whole(model());
  const std::vector<double> want = trainTheOracle(whole, OptimizerKind::kAdamW);
  std::mutex mutex;
  std::vector<std::vector<float>> params(2);
  std::vector<std::vector<double>> losses(2);
  testing::runRanks(2, [&](int rank, std::shared_ptr<Communicator> world) {
    ParallelConfig p;
    p.micro_batches = 2;
    p.bucket_elements = 1500;
    p.dp_bf16_communication = true;
    p.timeout = std::chrono::seconds(60);
    ParallelTrainer trainer(model(), optimizerConfig(OptimizerKind::kAdamW), p, kBatch, world, 17, Precision::kFp32);
    for (int s = 0; s < kSteps; ++s) {
      const auto in = batchTokens(s, 0), target = batchTokens(s, 1);
      losses[static_cast<size_t>(rank)].push_back(trainer.step(in.data(), target.data(), lr(s)).loss);
    }
    trainer.optimizer().synchronizeParameters();
    std::vector<std::vector<float>> master;
    trainer.optimizer().gatherMasterWeights(master);
    const Gpt<float>& chunk = *trainer.chunks()[0];
    int64_t not_bf16 = 0;
    for (int64_t i = 0; i < chunk.parameterCount(); ++i) {
      const float m = master[0][static_cast<size_t>(i)];
      ASSERT_EQ(chunk.parameters()[i], fromBf16(toBf16(m))) << "rank " << rank << " parameter " << i;
      if (fromBf16(toBf16(m)) != m) ++not_bf16;
    }
    EXPECT_GT(not_bf16, chunk.parameterCount() / 2) << "the master weights keep their low bits";
    std::lock_guard lock(mutex);
    params[static_cast<size_t>(rank)].assign(chunk.parameters(), chunk.parameters() + chunk.parameterCount());
  });
  EXPECT_EQ(params[0], params[1]) << "both data-parallel ranks compute with the same weights";
  EXPECT_EQ(losses[0], losses[1]);
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_NEAR(losses[0][static_cast<size_t>(s)], want[static_cast<size_t>(s)], 1e-2 * want[static_cast<size_t>(s)]);
  }
}

// bf16 pipeline traffic: activations and their gradients are rounded to bf16 on the wire (as Megatron-LM's
// bf16 pipeline moves them), so the losses leave the fp32 oracle's bits but follow it to bf16's precision, on
// plain and interleaved 1F1B.
TEST(ParallelTrainerBf16Traffic, PipelineMessagesCrossInBf16) {
  Gpt<float> whole(model());
  const std::vector<double> want = trainTheOracle(whole, OptimizerKind::kAdamW);
  for (const int virtual_stages : {1, 2}) {
    std::vector<double> losses;
    testing::runRanks(2, [&](int rank, std::shared_ptr<Communicator> world) {
      ParallelConfig p;
      p.pp = 2;
      p.virtual_stages = virtual_stages;
      p.micro_batches = 2;
      p.pp_bf16_communication = true;
      p.timeout = std::chrono::seconds(60);
      ParallelTrainer trainer(model(), optimizerConfig(OptimizerKind::kAdamW), p, kBatch, world, 17, Precision::kFp32);
      for (int s = 0; s < kSteps; ++s) {
        const auto in = batchTokens(s, 0), target = batchTokens(s, 1);
        const double loss = trainer.step(in.data(), target.data(), lr(s)).loss;
        if (rank == 0) losses.push_back(loss);
      }
    });
    ASSERT_EQ(losses.size(), static_cast<size_t>(kSteps));
    EXPECT_NE(losses, want) << "virtual stages " << virtual_stages << ": the messages were not rounded";
    for (int s = 0; s < kSteps; ++s) {
      EXPECT_NEAR(losses[static_cast<size_t>(s)], want[static_cast<size_t>(s)], 1e-2 * want[static_cast<size_t>(s)])
          << "virtual stages " << virtual_stages << " step " << s;
    }
  }
}

// Interleaved 1F1B's next step reads chunk 0 before chunk 1: the updated buckets' all-gathers start in that
// order, each chunk's buckets in the reverse of their gradient order (its first layer first).
TEST(ParallelTrainerZero, AllGathersStartInTheNextForwardsReadingOrder) {
  testing::runRanks(4, [&](int, std::shared_ptr<Communicator> world) {
    ParallelConfig p;
    p.pp = 2;
    p.virtual_stages = 2;
    p.micro_batches = 2;
    p.bucket_elements = 1500;
    p.timeout = std::chrono::seconds(60);
    ParallelTrainer trainer(model(), optimizerConfig(OptimizerKind::kAdamW), p, kBatch, world, 17, Precision::kFp32);
    const ZeroOptimizer& zero = trainer.optimizer();
    const std::vector<size_t>& order = zero.gatherOrder();
    ASSERT_EQ(order.size(), static_cast<size_t>(zero.bucketCount()));
    EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), order.size()) << "each bucket once";
    EXPECT_EQ(zero.bucketChunk(order.front()), 0);
    EXPECT_EQ(zero.bucketChunk(order.back()), 1);
    for (size_t k = 1; k < order.size(); ++k) {
      const int before = zero.bucketChunk(order[k - 1]), after = zero.bucketChunk(order[k]);
      EXPECT_LE(before, after);
      if (before == after) {
        EXPECT_GT(order[k - 1], order[k]);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, ParallelTrainerTest,
                         ::testing::Values(Case{"micro4", 1, 1, 1, 1, 4}, Case{"dp2", 2, 1, 1, 1, 2},
                                           Case{"tp2", 2, 2, 1, 1, 1}, Case{"pp2", 2, 1, 2, 1, 2},
                                           Case{"pp2_v2", 2, 1, 2, 2, 2},
                                           Case{"pp2_v2_group4", 2, 1, 2, 2, 4, OptimizerKind::kAdamW, true, 4},
                                           Case{"pp2_v2_group4_no_overlap", 2, 1, 2, 2, 4, OptimizerKind::kAdamW, false, 4},
                                           Case{"tp2_pp2_dp2", 8, 2, 2, 1, 1},
                                           Case{"tp2_dp2_lamb", 4, 2, 1, 1, 1, OptimizerKind::kLamb},
                                           Case{"pp2_dp2_no_overlap", 4, 1, 2, 1, 2, OptimizerKind::kAdamW, false},
                                           Case{"pp2_v2_no_overlap", 2, 1, 2, 2, 4, OptimizerKind::kAdamW, false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace megascale::trainer
