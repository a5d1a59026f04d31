// The parameter hooks the data-parallel optimizer overlaps its transfers with: a forward reads no parameter
// before its range's before_use hook, and a backward's gradients_done hook comes only once the range's
// gradients are final, in gradientOrder()'s order, over ranges that cover the buffer once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "trainer/model/gpt.h"
#include "trainer/model_configs.h"

namespace megascale::trainer {
namespace {

using Range = Gpt<float>::ParamRange;

std::vector<int32_t> tokens(int64_t n, int32_t vocab, int seed) {
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<int32_t>((i * 5 + seed * 3 + i * i) % vocab);
  return out;
}

class GptHooks : public ::testing::TestWithParam<BlockKind> {
 protected:
  ModelConfig config() const { return testing::modelConfig(3, 8, 2, 6, 13, GetParam(), 0); }
};

TEST_P(GptHooks, ForwardReadsEachRangeOnlyAfterItsHook) {
  Gpt<float> model(config());
  model.initialize(3);
  const int64_t batch = 2;
  const auto in = tokens(batch * 6, 13, 1), target = tokens(batch * 6, 13, 2);
  const float expected = model.forward(in.data(), target.data(), batch);

  // Poison every parameter; each hook brings its range back just in time. A read before the hook gives NaN.
  const std::vector<float> saved(model.parameters(), model.parameters() + model.parameterCount());
  std::fill_n(model.parameters(), model.parameterCount(), std::numeric_limits<float>::quiet_NaN());
  std::vector<int> restored(saved.size(), 0);
  model.setParameterHooks(
      [&](Range r) {
        std::copy(saved.begin() + r.begin, saved.begin() + r.end, model.parameters() + r.begin);
        for (int64_t i = r.begin; i < r.end; ++i) ++restored[static_cast<size_t>(i)];
      },
      nullptr);
  EXPECT_EQ(model.forward(in.data(), target.data(), batch), expected);
  EXPECT_TRUE(std::all_of(restored.begin(), restored.end(), [](int n) { return n == 1; }))
      << "every parameter is announced exactly once per forward";
}

TEST_P(GptHooks, GradientsLeaveFinalInGradientOrder) {
  Gpt<float> model(config());
  model.initialize(4);
  const int64_t batch = 2;
  const auto in = tokens(batch * 6, 13, 3), target = tokens(batch * 6, 13, 4);
  std::vector<Range> seen;
  std::vector<std::vector<float>> at_hook;
  model.setParameterHooks(nullptr, [&](Range r) {
    seen.push_back(r);
    at_hook.emplace_back(model.gradients() + r.begin, model.gradients() + r.end);
  });
  model.zeroGradients();
  model.forward(in.data(), target.data(), batch);
  model.backward();

  const std::vector<Range> order = model.gradientOrder();
  ASSERT_EQ(seen, order);
  // Finer than a layer: each of the 3 layers gives 4 ranges (one per GEMM), plus the embedding and the head.
  EXPECT_EQ(order.size(), 3u * 4u + 2u);
  std::vector<int> covered(static_cast<size_t>(model.parameterCount()), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const Range r = order[k];
    for (int64_t i = r.begin; i < r.end; ++i) ++covered[static_cast<size_t>(i)];
    EXPECT_TRUE(std::equal(at_hook[k].begin(), at_hook[k].end(), model.gradients() + r.begin))
        << "range [" << r.begin << ", " << r.end << ") changed after its gradients_done hook";
  }
  EXPECT_TRUE(std::all_of(covered.begin(), covered.end(), [](int n) { return n == 1; }));
}

INSTANTIATE_TEST_SUITE_P(Blocks, GptHooks, ::testing::Values(BlockKind::kParallel, BlockKind::kSerial),
                         [](const auto& info) { return std::string(blockKindName(info.param)); });

}  // namespace
}  // namespace megascale::trainer
