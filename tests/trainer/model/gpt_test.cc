#include "trainer/model/gpt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trainer/gradient_check.h"
#include "trainer/model_configs.h"
#include "trainer/kernels/gemm_bf16.h"

namespace megascale::trainer {
namespace {

ModelConfig tiny(BlockKind block, int64_t window) { return testing::modelConfig(2, 8, 2, 6, 13, block, window); }

std::vector<int32_t> tokens(int64_t n, int32_t vocab, int seed) {
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7 + seed * 5 + i * i) % vocab);
  return out;
}

struct GradientCase {
  BlockKind block;
  int64_t window;
};

class GptGradient : public ::testing::TestWithParam<GradientCase> {};

// Every parameter tensor's gradient against finite differences of the whole model's loss.
TEST_P(GptGradient, EveryTensorMatchesFiniteDifferences) {
  Gpt<double> model(tiny(GetParam().block, GetParam().window));
  model.initialize(7);
  // Spread the weights so every path (attention scores, GELU curvature) matters to the loss.
  for (int64_t i = 0; i < model.parameterCount(); ++i) model.parameters()[i] *= 10;
  const int64_t batch = 2, n = batch * 6;
  auto in = tokens(n, 13, 1), target = tokens(n, 13, 2);
  model.zeroGradients();
  model.forward(in.data(), target.data(), batch);
  model.backward();
  for (const auto& spec : model.parameterTable()) {
    std::vector<double> x(model.parameters() + spec.offset, model.parameters() + spec.offset + spec.size());
    std::vector<double> analytic(model.gradients() + spec.offset, model.gradients() + spec.offset + spec.size());
    auto loss = [&] {
      std::copy(x.begin(), x.end(), model.parameters() + spec.offset);
      return model.forward(in.data(), target.data(), batch);
    };
    EXPECT_LT(testing::worstGradientError(loss, x, analytic, 24), 1e-5) << spec.name;
    std::copy(x.begin(), x.end(), model.parameters() + spec.offset);
  }
}

INSTANTIATE_TEST_SUITE_P(Blocks, GptGradient,
                         ::testing::Values(GradientCase{BlockKind::kParallel, 0}, GradientCase{BlockKind::kSerial, 0},
                                           GradientCase{BlockKind::kParallel, 3}, GradientCase{BlockKind::kSerial, 2}),
                         [](const auto& info) {
                           return std::string(blockKindName(info.param.block)) + "_window" +
                                  std::to_string(info.param.window);
                         });

TEST(Gpt, InitialLossIsNearUniform) {
  Gpt<float> model(tiny(BlockKind::kParallel, 0));
  model.initialize(1);
  auto in = tokens(4 * 6, 13, 3), target = tokens(4 * 6, 13, 4);
  EXPECT_NEAR(model.forward(in.data(), target.data(), 4), std::log(13.0), 0.05);
}

TEST(Gpt, SameSeedSameWeightsAndBatchSizeCanChange) {
  Gpt<float> a(tiny(BlockKind::kSerial, 0)), b(tiny(BlockKind::kSerial, 0));
  a.initialize(5);
  b.initialize(5);
  ASSERT_TRUE(std::equal(a.parameters(), a.parameters() + a.parameterCount(), b.parameters()));
  auto in = tokens(3 * 6, 13, 5), target = tokens(3 * 6, 13, 6);
  float three = a.forward(in.data(), target.data(), 3);
  float one = a.forward(in.data(), target.data(), 1);
  EXPECT_TRUE(std::isfinite(three));
  EXPECT_TRUE(std::isfinite(one));
}

TEST(Gpt, TokenOutsideTheVocabularyIsRefused) {
  Gpt<float> model(tiny(BlockKind::kParallel, 0));
  auto in = tokens(6, 13, 7), target = tokens(6, 13, 8);
  in[4] = 13;
  try {
    model.forward(in.data(), target.data(), 1);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input token 13 at position 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace megascale::trainer

namespace megascale::trainer {
namespace {

// bf16 GEMMs with fp32 master weights track the fp32 model: same loss to bf16 rounding, gradients pointing
// the same way, on AMX where present and on the widened-float path.
TEST(GptBf16, TracksTheFloatModel) {
  const ModelConfig c = testing::modelConfig(2, 64, 4, 32, 50, BlockKind::kSerial, 4);
  auto in = tokens(4 * 32, 50, 9), target = tokens(4 * 32, 50, 10);
  for (const std::string& backend : availableBf16GemmBackends()) {
    selectBf16GemmBackend(backend);
    Gpt<float> full(c), half(c);
    full.initialize(4);
    half.initialize(4);
    half.setPrecision(Precision::kBf16);
    full.zeroGradients();
    half.zeroGradients();
    const float loss_full = full.forward(in.data(), target.data(), 4);
    const float loss_half = half.forward(in.data(), target.data(), 4);
    EXPECT_NEAR(loss_half, loss_full, 2e-3 * loss_full) << backend;
    full.backward();
    half.backward();
    double dot = 0, norm_full = 0, norm_half = 0;
    for (int64_t i = 0; i < full.parameterCount(); ++i) {
      dot += double(full.gradients()[i]) * half.gradients()[i];
      norm_full += double(full.gradients()[i]) * full.gradients()[i];
      norm_half += double(half.gradients()[i]) * half.gradients()[i];
    }
    EXPECT_GT(dot / std::sqrt(norm_full * norm_half), 0.999) << backend;
  }
  selectBf16GemmBackend("auto");
}

TEST(GptBf16, DoubleModelsRefuseIt) {
  Gpt<double> model(tiny(BlockKind::kParallel, 0));
  EXPECT_THROW(model.setPrecision(Precision::kBf16), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::trainer
