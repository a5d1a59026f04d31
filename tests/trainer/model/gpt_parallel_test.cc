// The model cut for parallelism gives the whole model's loss and gradients: tensor-parallel slices (sequence
// parallel, ranks as threads over real communicators, with and without chunked overlap), pipeline stages
// handing activations on, and several micro-batches in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "trainer/model/gpt.h"
#include "trainer/parallel/tensor_parallel.h"
#include "trainer/model_configs.h"
#include "trainer/rank_threads.h"

namespace megascale::trainer {
namespace {

std::vector<int32_t> tokens(int64_t n, int32_t vocab, int seed) {
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7 + seed * 5 + i * i) % vocab);
  return out;
}

// Gradients by tensor name, as whole (global) tensors.
using NamedTensors = std::vector<std::pair<std::string, std::vector<float>>>;

NamedTensors globalGradients(const Gpt<float>& model) {
  NamedTensors out;
  for (const auto& spec : model.parameterTable()) {
    std::vector<float> whole(static_cast<size_t>(globalSize(spec)), 0.0f);
    copyShardToGlobal(spec, model.gradients() + spec.offset, whole.data());
    out.emplace_back(spec.name, std::move(whole));
  }
  return out;
}

// Adds `part`'s shards (zeros elsewhere) into the named totals.
void accumulate(NamedTensors& total, const NamedTensors& part, bool replicated_once) {
  for (const auto& [name, values] : part) {
    auto it = std::find_if(total.begin(), total.end(), [&](const auto& t) { return t.first == name; });
    if (it == total.end()) {
      total.emplace_back(name, values);
      continue;
    }
    if (replicated_once) continue;
    for (size_t i = 0; i < values.size(); ++i) it->second[i] += values[i];
  }
}

void expectClose(const NamedTensors& expected, const NamedTensors& actual, double tolerance) {
  ASSERT_EQ(expected.size(), actual.size());
  for (const auto& [name, want] : expected) {
    auto it = std::find_if(actual.begin(), actual.end(), [&](const auto& t) { return t.first == name; });
    ASSERT_NE(it, actual.end()) << name;
    double scale = 1e-6, worst = 0;
    for (float w : want) scale = std::max(scale, static_cast<double>(std::fabs(w)));
    for (size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(double(want[i]) - it->second[i]));
    EXPECT_LT(worst / scale, tolerance) << name;
  }
}

struct Reference {
  float loss;
  NamedTensors grads;
};

Reference wholeModel(const ModelConfig& c, int64_t batch, uint64_t seed) {
  Gpt<float> model(c);
  model.initialize(seed);
  const auto in = tokens(batch * c.seq_len, static_cast<int32_t>(c.vocab), 1);
  const auto target = tokens(batch * c.seq_len, static_cast<int32_t>(c.vocab), 2);
  model.zeroGradients();
  Reference r{model.forward(in.data(), target.data(), batch), {}};
  model.backward();
  r.grads = globalGradients(model);
  return r;
}

struct TensorCase {
  BlockKind block;
  int tp;
  int chunks;
};

class TensorParallelGpt : public ::testing::TestWithParam<TensorCase> {};

TEST_P(TensorParallelGpt, LossAndGradientsEqualTheWholeModel) {
  const TensorCase tc = GetParam();
  const ModelConfig c = testing::modelConfig(2, 32, 4, 12, 23, tc.block, 5);
  const int64_t batch = 2;
  const Reference want = wholeModel(c, batch, 11);
  const auto in = tokens(batch * c.seq_len, 23, 1), target = tokens(batch * c.seq_len, 23, 2);

  std::vector<NamedTensors> per_rank(static_cast<size_t>(tc.tp));
  std::vector<std::vector<bool>> sharded(static_cast<size_t>(tc.tp));
  std::vector<float> losses(static_cast<size_t>(tc.tp));
  testing::runRanks(tc.tp, [&](int rank, std::shared_ptr<Communicator> comm) {
    TensorParallelGroup group(comm, tc.chunks, std::chrono::seconds(60));
    ModelSlice slice;
    slice.tp_size = tc.tp;
    slice.tp_rank = rank;
    Gpt<float> model(c, slice, &group);
    model.initialize(11);
    model.zeroGradients();
    losses[static_cast<size_t>(rank)] = model.forward(in.data(), target.data(), batch);
    model.backward();
    per_rank[static_cast<size_t>(rank)] = globalGradients(model);
    for (const auto& spec : model.parameterTable()) sharded[static_cast<size_t>(rank)].push_back(spec.layout.shard_dim >= 0);
  });
  // Sharded tensors: the ranks' parts add up to the whole; replicated ones: every rank holds the same sum.
  NamedTensors got = per_rank[0];
  for (size_t r = 1; r < per_rank.size(); ++r) {
    for (size_t t = 0; t < got.size(); ++t) {
      const auto& mine = per_rank[r][t].second;
      if (!sharded[r][t]) {
        EXPECT_EQ(mine, got[t].second) << got[t].first << " differs on rank " << r;
        continue;
      }
      for (size_t i = 0; i < mine.size(); ++i) got[t].second[i] += mine[i];
    }
  }
  for (float loss : losses) EXPECT_NEAR(loss, want.loss, 1e-5 * want.loss);
  expectClose(want.grads, got, 2e-5);
}

INSTANTIATE_TEST_SUITE_P(Layouts, TensorParallelGpt,
                         ::testing::Values(TensorCase{BlockKind::kParallel, 2, 1}, TensorCase{BlockKind::kParallel, 2, 3},
                                           TensorCase{BlockKind::kSerial, 2, 2}, TensorCase{BlockKind::kParallel, 4, 2},
                                           TensorCase{BlockKind::kSerial, 4, 1}),
                         [](const auto& info) {
                           return std::string(blockKindName(info.param.block)) + "_tp" + std::to_string(info.param.tp) +
                                  "_chunks" + std::to_string(info.param.chunks);
                         });

// Two stages in one process: the activations and their gradients handed across by hand, two micro-batches
// in flight (both forwards, then the backwards in reverse), the tied embedding's two copies summed.
TEST(PipelineStages, TwoStagesAndTwoMicroBatchesEqualTheWholeModel) {
  for (BlockKind block : {BlockKind::kParallel, BlockKind::kSerial}) {
    const ModelConfig c = testing::modelConfig(3, 16, 2, 8, 19, block);
    const int64_t micro = 2, batch = 2 * micro, rows = micro * c.seq_len;
    const Reference want = wholeModel(c, batch, 5);
    const auto in = tokens(batch * c.seq_len, 19, 1), target = tokens(batch * c.seq_len, 19, 2);

    ModelSlice first, second;
    first.layer_count = 2;
    second.first_layer = 2;
    Gpt<float> head_less(c, first), tail(c, second);
    head_less.initialize(5);
    tail.initialize(5);
    head_less.zeroGradients();
    tail.zeroGradients();
    const float scale = 1.0f / static_cast<float>(batch * c.seq_len);
    std::vector<float> act(static_cast<size_t>(rows * c.d_model)), grad(act.size());
    double loss = 0;
    for (int m = 0; m < 2; ++m) {
      const int32_t* mb_in = in.data() + m * rows;
      const int32_t* mb_target = target.data() + m * rows;
      head_less.forwardStage(m, {mb_in, nullptr, nullptr, micro, 0}, act.data());
      loss += tail.forwardStage(m, {nullptr, act.data(), mb_target, micro, scale}, nullptr);
    }
    EXPECT_THROW(head_less.backwardStage(0, nullptr, nullptr), std::invalid_argument);
    for (int m = 1; m >= 0; --m) {
      tail.backwardStage(m, nullptr, grad.data());
      head_less.backwardStage(m, grad.data(), nullptr);
    }
    EXPECT_THROW(tail.backwardStage(1, nullptr, grad.data()), std::logic_error);  // already consumed
    EXPECT_NEAR(loss * scale, want.loss, 1e-5 * want.loss);
    NamedTensors got;
    accumulate(got, globalGradients(head_less), false);
    accumulate(got, globalGradients(tail), false);  // wte: the embedding's and the head's copies add up
    expectClose(want.grads, got, 2e-5);
  }
}

TEST(PipelineStages, MisuseIsRefusedWithAReason) {
  const ModelConfig c = testing::modelConfig(2, 16, 2, 8, 19);
  ModelSlice second;
  second.first_layer = 1;
  Gpt<float> tail(c, second);
  EXPECT_THROW(tail.forward(nullptr, nullptr, 1), std::logic_error);  // a stage is not the whole model
  std::vector<int32_t> target(8, 1);
  EXPECT_THROW(tail.forwardStage(0, {target.data(), nullptr, target.data(), 1, 1}, nullptr), std::invalid_argument);
  ModelSlice tp2;
  tp2.tp_size = 2;
  EXPECT_THROW(Gpt<float>(c, tp2), std::invalid_argument);  // no group given
  Gpt<float> whole(c);
  EXPECT_THROW(whole.backward(), std::logic_error);
}

TEST(PipelineStages, EveryLayoutStartsFromTheSameWeights) {
  const ModelConfig c = testing::modelConfig(2, 16, 2, 8, 19);
  Gpt<float> whole(c);
  whole.initialize(9);
  ModelSlice last;
  last.first_layer = 1;
  Gpt<float> tail(c, last);
  tail.initialize(9);
  for (const auto& spec : tail.parameterTable()) {
    const auto& whole_table = whole.parameterTable();
    auto it = std::find_if(whole_table.begin(), whole_table.end(), [&](const auto& s) { return s.name == spec.name; });
    ASSERT_NE(it, whole_table.end());
    EXPECT_TRUE(std::equal(tail.parameters() + spec.offset, tail.parameters() + spec.offset + spec.size(),
                           whole.parameters() + it->offset))
        << spec.name;
  }
}

}  // namespace
}  // namespace megascale::trainer
