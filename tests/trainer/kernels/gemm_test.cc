#include "trainer/kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trainer/gradient_check.h"

namespace megascale::trainer {
namespace {

struct Case {
  Trans ta, tb;
  int64_t m, n, k;
  float beta;
};

// Every backend on odd shapes (edge tiles), both transposes, beta 0/1/0.5, and padded leading dimensions.
class GemmBackendTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GemmBackendTest, MatchesTheReferenceLoop) {
  selectGemmBackend(GetParam(), 0, 0, 0, 0);
  ASSERT_EQ(currentGemmBackend(), GetParam());
  const Case cases[] = {{Trans::kNo, Trans::kNo, 37, 45, 29, 0.0f},   {Trans::kYes, Trans::kNo, 13, 70, 300, 1.0f},
                        {Trans::kNo, Trans::kYes, 100, 33, 257, 0.5f}, {Trans::kYes, Trans::kYes, 25, 64, 31, 0.0f},
                        {Trans::kNo, Trans::kNo, 200, 2100, 20, 1.0f}, {Trans::kNo, Trans::kNo, 1, 1, 1, 0.0f},
                        {Trans::kYes, Trans::kNo, 130, 47, 270, 0.0f}, {Trans::kYes, Trans::kYes, 101, 50, 513, 1.0f}};
  for (const Case& c : cases) {
    const int64_t pad = 3;
    const int64_t a_rows = c.ta == Trans::kNo ? c.m : c.k, a_cols = c.ta == Trans::kNo ? c.k : c.m;
    const int64_t b_rows = c.tb == Trans::kNo ? c.k : c.n, b_cols = c.tb == Trans::kNo ? c.n : c.k;
    auto to_float = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
    auto a = to_float(testing::pseudoRandom(static_cast<size_t>(a_rows * (a_cols + pad)), 1));
    auto b = to_float(testing::pseudoRandom(static_cast<size_t>(b_rows * (b_cols + pad)), 2));
    auto c0 = to_float(testing::pseudoRandom(static_cast<size_t>(c.m * (c.n + pad)), 3));
    auto expected = c0, got = c0;
    GemmCall<float> call{c.ta, c.tb, c.m, c.n, c.k, a.data(), a_cols + pad, b.data(), b_cols + pad, c.beta,
                         got.data(), c.n + pad};
    gemm(call);
    call.c = expected.data();
    gemmReference(call);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n + pad; ++j) {
        const size_t at = static_cast<size_t>(i * (c.n + pad) + j);
        // Padding columns must be untouched; the rest agrees to float rounding of a k-term sum.
        const float tolerance = j < c.n ? 2e-5f * static_cast<float>(c.k + 1) : 0.0f;
        ASSERT_NEAR(got[at], expected[at], tolerance)
            << GetParam() << " " << static_cast<char>(c.ta) << static_cast<char>(c.tb) << " m" << c.m << " n" << c.n
            << " k" << c.k << " at " << i << "," << j;
      }
    }
  }
}

std::vector<std::string> backendNames() {
  std::vector<std::string> names;
  for (const auto& b : availableGemmBackends()) names.push_back(b.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Available, GemmBackendTest, ::testing::ValuesIn(backendNames()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

TEST(GemmSelection, AutoMeasuresEveryBackendAndKeepsTheFastest) {
  GemmChoice choice = selectGemmBackend("auto", 128, 128, 128, 0.01);
  ASSERT_FALSE(choice.measured.empty());
  double best = 0;
  for (const auto& [name, rate] : choice.measured) {
    EXPECT_GT(rate, 0) << name;
    best = std::max(best, rate);
  }
  EXPECT_EQ(choice.gflops, best);
  EXPECT_EQ(currentGemmBackend(), choice.backend);
}

TEST(GemmSelection, UnknownBackendIsRefusedWithTheChoices) {
  try {
    selectGemmBackend("mkl", 0, 0, 0, 0);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'mkl' is not available"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ours-portable"), std::string::npos) << e.what();
  }
}

TEST(GemmDouble, MatchesTheReferenceLoop) {
  auto a = testing::pseudoRandom(7 * 9, 4), b = testing::pseudoRandom(9 * 5, 5), c = testing::pseudoRandom(35, 6);
  auto expected = c;
  GemmCall<double> call{Trans::kNo, Trans::kNo, 7, 5, 9, a.data(), 9, b.data(), 5, 1.0, c.data(), 5};
  gemm(call);
  call.c = expected.data();
  gemmReference(call);
  for (size_t i = 0; i < c.size(); ++i) EXPECT_NEAR(c[i], expected[i], 1e-13);
}

}  // namespace
}  // namespace megascale::trainer
