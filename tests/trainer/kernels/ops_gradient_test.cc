// Each op's backward against central finite differences of L = sum(forward(x) * R), in double precision.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trainer/gradient_check.h"
#include "trainer/kernels/attention.h"
#include "trainer/kernels/cross_entropy.h"
#include "trainer/kernels/embedding.h"
#include "trainer/kernels/gelu.h"
#include "trainer/kernels/layernorm.h"
#include "trainer/kernels/linear.h"

namespace megascale::trainer {
namespace {

using testing::pseudoRandom;
using testing::worstGradientError;
constexpr double kTolerance = 1e-6;

double weightedSum(const std::vector<double>& y, const std::vector<double>& r) {
  double s = 0;
  for (size_t i = 0; i < y.size(); ++i) s += y[i] * r[i];
  return s;
}

TEST(LayerNormGradient, InputGainAndBias) {
  const int64_t rows = 5, ch = 12;
  auto x = pseudoRandom(rows * ch, 1, 2.0), gamma = pseudoRandom(ch, 2), beta = pseudoRandom(ch, 3);
  auto r = pseudoRandom(rows * ch, 4);
  std::vector<double> y(x.size()), mean(rows), rstd(rows);
  auto loss = [&] {
    layerNormForward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), rows, ch);
    return weightedSum(y, r);
  };
  loss();
  std::vector<double> dx(x.size(), 0.0), dgamma(ch, 0.0), dbeta(ch, 0.0);
  layerNormBackward(dx.data(), dgamma.data(), dbeta.data(), r.data(), x.data(), mean.data(), rstd.data(), gamma.data(),
                    rows, ch);
  EXPECT_LT(worstGradientError(loss, x, dx), kTolerance);
  EXPECT_LT(worstGradientError(loss, gamma, dgamma), kTolerance);
  EXPECT_LT(worstGradientError(loss, beta, dbeta), kTolerance);
}

TEST(LayerNormGradient, BackwardAccumulatesIntoTheInputGradient) {
  const int64_t rows = 2, ch = 4;
  auto x = pseudoRandom(rows * ch, 5), gamma = pseudoRandom(ch, 6), beta = pseudoRandom(ch, 7);
  auto r = pseudoRandom(rows * ch, 8);
  std::vector<double> y(x.size()), mean(rows), rstd(rows), dgamma(ch), dbeta(ch);
  layerNormForward(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), rows, ch);
  std::vector<double> fresh(x.size(), 0.0), preset(x.size(), 1.0);
  layerNormBackward(fresh.data(), dgamma.data(), dbeta.data(), r.data(), x.data(), mean.data(), rstd.data(),
                    gamma.data(), rows, ch);
  layerNormBackward(preset.data(), dgamma.data(), dbeta.data(), r.data(), x.data(), mean.data(), rstd.data(),
                    gamma.data(), rows, ch);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(preset[i], fresh[i] + 1.0, 1e-14);
}

TEST(GeluGradient, MatchesFiniteDifferences) {
  auto x = pseudoRandom(64, 9, 4.0), r = pseudoRandom(64, 10);
  std::vector<double> y(x.size());
  auto loss = [&] {
    geluForward(y.data(), x.data(), static_cast<int64_t>(x.size()));
    return weightedSum(y, r);
  };
  loss();
  std::vector<double> dx(x.size());
  geluBackward(dx.data(), r.data(), x.data(), static_cast<int64_t>(x.size()));
  EXPECT_LT(worstGradientError(loss, x, dx), kTolerance);
  double at_one = 0;
  geluForward(&at_one, std::vector<double>{1.0}.data(), 1);
  EXPECT_NEAR(at_one, 0.8411919906082768, 1e-12);  // 0.5 (1 + tanh(sqrt(2/pi) * 1.044715))
}

// The float loops (AVX-512 and AVX2 builds) against the double ones, over the range where tanh saturates and
// a length that leaves a vector's tail.
TEST(GeluFloat, BothVectorBuildsMatchDouble) {
  auto x = pseudoRandom(1003, 30, 12.0), r = pseudoRandom(1003, 31);
  const auto n = static_cast<int64_t>(x.size());
  for (bool avx512 : {true, false}) {
    useAvx512Gelu(avx512);
    std::vector<float> x_f(x.begin(), x.end()), r_f(r.begin(), r.end()), y_f(x.size()), dx_f(x.size());
    geluForward(y_f.data(), x_f.data(), n);
    geluBackward(dx_f.data(), r_f.data(), x_f.data(), n);
    for (size_t i = 0; i < x.size(); ++i) {
      // The inputs are rounded to float: compare at the rounded point.
      const double xi = x_f[i];
      std::vector<double> yi(1), dxi(1);
      const double ri = r_f[i];
      geluForward(yi.data(), &xi, 1);
      geluBackward(dxi.data(), &ri, &xi, 1);
      ASSERT_NEAR(y_f[i], yi[0], 1e-6 * (1 + std::abs(yi[0]))) << "avx512=" << avx512 << " x=" << xi;
      ASSERT_NEAR(dx_f[i], dxi[0], 1e-6 * (1 + std::abs(dxi[0]))) << "avx512=" << avx512 << " x=" << xi;
    }
  }
  useAvx512Gelu(true);
}

TEST(LinearGradient, InputWeightAndBias) {
  const LinearShape s{6, 5, 7};
  auto x = pseudoRandom(s.rows * s.in, 11), w = pseudoRandom(s.in * s.out, 12), b = pseudoRandom(s.out, 13);
  auto r = pseudoRandom(s.rows * s.out, 14);
  std::vector<double> y(s.rows * s.out);
  auto loss = [&] {
    linearForward(y.data(), x.data(), w.data(), b.data(), s, false);
    return weightedSum(y, r);
  };
  loss();
  std::vector<double> dx(x.size()), dw(w.size(), 0.0), db(b.size(), 0.0);
  linearBackward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), s, false);
  EXPECT_LT(worstGradientError(loss, x, dx), kTolerance);
  EXPECT_LT(worstGradientError(loss, w, dw), kTolerance);
  EXPECT_LT(worstGradientError(loss, b, db), kTolerance);
}

TEST(LinearForward, AccumulateAddsOntoTheOutput) {
  const LinearShape s{2, 3, 2};
  std::vector<double> x{1, 2, 3, 4, 5, 6}, w{1, 0, 0, 1, 1, 1}, b{10, 20}, y{100, 200, 300, 400};
  linearForward(y.data(), x.data(), w.data(), b.data(), s, true);
  EXPECT_EQ(y, (std::vector<double>{100 + 4 + 10, 200 + 5 + 20, 300 + 10 + 10, 400 + 11 + 20}));
}

TEST(EmbeddingGradient, TokenAndPositionTables) {
  const int64_t batch = 2, seq = 3, ch = 4, vocab = 5;
  std::vector<int32_t> tokens{1, 4, 1, 0, 2, 1};  // repeated tokens must accumulate
  auto wte = pseudoRandom(vocab * ch, 15), wpe = pseudoRandom(seq * ch, 16), r = pseudoRandom(batch * seq * ch, 17);
  std::vector<double> y(r.size());
  auto loss = [&] {
    embeddingForward(y.data(), tokens.data(), wte.data(), wpe.data(), batch * seq, 0, seq, ch);
    return weightedSum(y, r);
  };
  std::vector<double> dwte(wte.size(), 0.0), dwpe(wpe.size(), 0.0);
  embeddingBackward(dwte.data(), dwpe.data(), r.data(), tokens.data(), batch * seq, 0, seq, ch);
  EXPECT_LT(worstGradientError(loss, wte, dwte), kTolerance);
  EXPECT_LT(worstGradientError(loss, wpe, dwpe), kTolerance);
}

TEST(CrossEntropyGradient, LogitsAndKnownValue) {
  const int64_t rows = 3, vocab = 6;
  auto logits = pseudoRandom(rows * vocab, 18, 3.0);
  std::vector<int32_t> targets{0, 5, 2};
  std::vector<double> losses(rows), lse(rows);
  auto loss = [&] {
    crossEntropyForward(losses.data(), lse.data(), logits.data(), targets.data(), rows, vocab);
    return (losses[0] + losses[1] + losses[2]) / 3;
  };
  loss();
  std::vector<double> dlogits(logits.size());
  crossEntropyBackward(dlogits.data(), logits.data(), lse.data(), targets.data(), 1.0 / 3, rows, vocab);
  EXPECT_LT(worstGradientError(loss, logits, dlogits), kTolerance);
  std::vector<double> uniform(vocab, 0.5);
  double l = 0, z = 0;
  int32_t t = 3;
  crossEntropyForward(&l, &z, uniform.data(), &t, 1, vocab);
  EXPECT_NEAR(l, std::log(6.0), 1e-14);
}

struct AttentionCase {
  int64_t seq, window;
};
class AttentionGradient : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionGradient, QueriesKeysAndValues) {
  const AttentionShape s{2, GetParam().seq, 2, 3, GetParam().window};
  auto qkv = pseudoRandom(s.batch * s.seq * 3 * s.channels(), 19, 1.5);
  auto r = pseudoRandom(s.batch * s.seq * s.channels(), 20);
  std::vector<double> out(r.size()), lse(s.batch * s.heads * s.seq);
  auto loss = [&] {
    attentionForward(out.data(), lse.data(), qkv.data(), s);
    return weightedSum(out, r);
  };
  loss();
  std::vector<double> dqkv(qkv.size(), 123.0);  // overwritten, not accumulated
  attentionBackward(dqkv.data(), r.data(), qkv.data(), out.data(), lse.data(), s);
  EXPECT_LT(worstGradientError(loss, qkv, dqkv, 400), kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Windows, AttentionGradient,
                         ::testing::Values(AttentionCase{9, 9}, AttentionCase{9, 3}, AttentionCase{9, 1},
                                           AttentionCase{75, 75}, AttentionCase{75, 40}),  // several key tiles
                         [](const auto& info) {
                           return "seq" + std::to_string(info.param.seq) + "_window" +
                                  std::to_string(info.param.window);
                         });

// The float kernels (AVX-512 and AVX2 builds) against the double ones on a shape with several tiles.
TEST(AttentionFloat, BothVectorBuildsMatchDouble) {
  const AttentionShape s{2, 100, 3, 64, 70};
  auto qkv = pseudoRandom(s.batch * s.seq * 3 * s.channels(), 22, 1.0);
  auto dout = pseudoRandom(s.batch * s.seq * s.channels(), 23, 1.0);
  std::vector<double> out(dout.size()), lse(s.batch * s.heads * s.seq), dqkv(qkv.size());
  attentionForward(out.data(), lse.data(), qkv.data(), s);
  attentionBackward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), s);
  for (bool avx512 : {true, false}) {
    useAvx512Attention(avx512);
    std::vector<float> qkv_f(qkv.begin(), qkv.end()), dout_f(dout.begin(), dout.end());
    std::vector<float> out_f(out.size()), lse_f(lse.size()), dqkv_f(qkv.size());
    attentionForward(out_f.data(), lse_f.data(), qkv_f.data(), s);
    attentionBackward(dqkv_f.data(), dout_f.data(), qkv_f.data(), out_f.data(), lse_f.data(), s);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out_f[i], out[i], 1e-5) << "avx512=" << avx512 << " out " << i;
    for (size_t i = 0; i < dqkv.size(); ++i)
      ASSERT_NEAR(dqkv_f[i], dqkv[i], 1e-4) << "avx512=" << avx512 << " dqkv " << i;
  }
  useAvx512Attention(true);
}

// Against the textbook definition with the full matrix: softmax(QK^T/sqrt(d) + mask) V.
TEST(AttentionForward, MatchesTheMaterializedSoftmaxWithAWindow) {
  const AttentionShape s{1, 150, 1, 4, 70};  // more keys than one tile, window cuts into the tiles
  auto qkv = pseudoRandom(s.seq * 3 * s.channels(), 21, 2.0);
  std::vector<double> out(s.seq * s.channels()), lse(s.seq);
  attentionForward(out.data(), lse.data(), qkv.data(), s);
  const int64_t c = s.channels(), stride = 3 * c;
  for (int64_t i = 0; i < s.seq; ++i) {
    std::vector<double> p;
    double top = -1e300;
    const int64_t first = std::max<int64_t>(0, i - s.window + 1);
    for (int64_t j = first; j <= i; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < c; ++d) dot += qkv[i * stride + d] * qkv[j * stride + c + d];
      p.push_back(dot / 2.0);
      top = std::max(top, p.back());
    }
    double sum = 0;
    for (double& v : p) sum += (v = std::exp(v - top));
    for (int64_t d = 0; d < c; ++d) {
      double expected = 0;
      for (int64_t j = first; j <= i; ++j) expected += p[j - first] / sum * qkv[j * stride + 2 * c + d];
      ASSERT_NEAR(out[i * c + d], expected, 1e-12) << "row " << i;
    }
    ASSERT_NEAR(lse[i], top + std::log(sum), 1e-12);
  }
}

}  // namespace
}  // namespace megascale::trainer
