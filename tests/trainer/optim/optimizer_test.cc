#include "trainer/optim/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>

namespace megascale::trainer {
namespace {

std::vector<ParamSpec> twoTensors() {
  // "w" decays, "b" does not.
  return {ParamSpec{"w", {2}, {2}, {}, true, 0}, ParamSpec{"b", {1}, {1}, {}, false, 2}};
}

TEST(LrSchedule, WarmupThenCosineToTheFloor) {
  LrSchedule s{1.0, 0.1, 4, 14};
  EXPECT_DOUBLE_EQ(s.at(0), 0.25);
  EXPECT_DOUBLE_EQ(s.at(3), 1.0);
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_NEAR(s.at(9), 0.55, 1e-12);  // half way: (max + min) / 2
  EXPECT_DOUBLE_EQ(s.at(14), 0.1);
  EXPECT_DOUBLE_EQ(s.at(100), 0.1);
}

TEST(AdamW, FirstStepMovesEachWeightByLrAgainstTheGradientSign) {
  OptimizerConfig c;
  c.weight_decay = 0.5;
  Optimizer<double> opt(c, twoTensors());
  std::vector<double> p{1.0, -2.0, 3.0}, g{0.3, -4.0, 0.01};
  opt.step(p.data(), g.data(), 0.1);
  // Bias-corrected m/sqrt(v) = sign(g) on step 1; decay multiplies by (1 - lr * wd) first.
  EXPECT_NEAR(p[0], 1.0 * (1 - 0.05) - 0.1, 1e-7);
  EXPECT_NEAR(p[1], -2.0 * (1 - 0.05) + 0.1, 1e-7);
  EXPECT_NEAR(p[2], 3.0 - 0.1, 1e-6);  // no decay on "b"
  EXPECT_EQ(opt.steps(), 1);
  EXPECT_NEAR(opt.firstMoment()[1], 0.1 * -4.0, 1e-15);
  EXPECT_NEAR(opt.secondMoment()[1], 0.05 * 16.0, 1e-15);
}

TEST(Lamb, TrustRatioScalesEachTensorByWeightOverUpdateNorm) {
  OptimizerConfig c;
  c.kind = OptimizerKind::kLamb;
  c.weight_decay = 0.0;
  c.epsilon = 0;
  Optimizer<double> opt(c, twoTensors());
  std::vector<double> p{3.0, 4.0, 0.0}, g{1.0, -1.0, 2.0};
  opt.step(p.data(), g.data(), 0.1);
  // u = (1, -1): ||w|| = 5, ||u|| = sqrt(2) -> step 0.1 * 5 / sqrt(2) along -u. "b" has ||w|| = 0: ratio 1.
  const double s = 0.1 * 5 / std::sqrt(2.0);
  EXPECT_NEAR(p[0], 3.0 - s, 1e-12);
  EXPECT_NEAR(p[1], 4.0 + s, 1e-12);
  EXPECT_NEAR(p[2], -0.1, 1e-12);
}

TEST(ClipGradientNorm, ScalesOnlyAboveTheLimitAndReportsTheNorm) {
  std::vector<float> g{3, 4};
  EXPECT_DOUBLE_EQ(clipGradientNorm(g.data(), 2, 10.0), 5.0);
  EXPECT_EQ(g, (std::vector<float>{3, 4}));
  EXPECT_DOUBLE_EQ(clipGradientNorm(g.data(), 2, 1.0), 5.0);
  EXPECT_NEAR(g[0], 0.6f, 1e-6);
  EXPECT_NEAR(g[1], 0.8f, 1e-6);
  EXPECT_NEAR(clipGradientNorm(g.data(), 2, 0.0), 1.0, 1e-6);  // 0 = no clipping, norm still reported
  EXPECT_NEAR(g[0], 0.6f, 1e-6);
}

TEST(OptimizerKind, ParsesNamesAndRefusesOthers) {
  EXPECT_EQ(parseOptimizerKind("lamb"), OptimizerKind::kLamb);
  EXPECT_THROW(parseOptimizerKind("sgd"), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::trainer
