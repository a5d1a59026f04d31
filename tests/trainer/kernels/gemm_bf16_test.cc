#include "trainer/kernels/gemm_bf16.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <vector>

#include "trainer/gradient_check.h"

namespace megascale::trainer {
namespace {

TEST(Bf16, RoundsToNearestEvenAndKeepsSpecials) {
  EXPECT_EQ(toBf16(1.0f), 0x3f80);
  EXPECT_EQ(fromBf16(toBf16(1.0f + 1.0f / 256)), 1.0f);              // halfway between 1 and 1+2^-7: to even (1)
  EXPECT_EQ(fromBf16(toBf16(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);  // halfway, rounds up to even
  EXPECT_TRUE(std::isnan(fromBf16(toBf16(NAN))));
  EXPECT_TRUE(std::isinf(fromBf16(toBf16(INFINITY))));
  std::vector<float> in{0.1f, -3.5f, 1e-20f};
  std::vector<bf16> out(3);
  convertToBf16(out.data(), in.data(), 3);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(fromBf16(out[i]), in[i], std::abs(in[i]) / 128);
}

// The whole-tensor conversion (AVX512-BF16's VCVTNE2PS2BF16 where the CPU has it) gives toBf16's bits for every
// input: ties, NaN, infinities, and denormals, which that instruction would read as zero.
TEST(Bf16, TensorConversionMatchesTheScalarRounding) {
  std::vector<float> in;
  for (int i = 0; i < 3000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(i) * 2654435761u;
    in.push_back(i % 97 == 5 ? std::bit_cast<float>(bits & 0x807fffffu)  // a denormal now and then
                             : std::bit_cast<float>((bits & 0xbfffffffu) | 0x00800000u));
  }
  in.insert(in.end(), {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-45f});
  for (const size_t count : {in.size(), in.size() - 7, size_t{31}, size_t{100000}}) {
    std::vector<float> src(count);
    for (size_t i = 0; i < count; ++i) src[i] = in[i % in.size()];
    std::vector<bf16> out(count);
    convertToBf16(out.data(), src.data(), static_cast<int64_t>(count));
    for (size_t i = 0; i < count; ++i) {
      ASSERT_EQ(out[i], toBf16(src[i])) << "element " << i << " of " << count << ": bits " << std::hex
                                        << std::bit_cast<uint32_t>(src[i]);
    }
  }
}

struct Case {
  Trans ta, tb;
  int64_t m, n, k;
  float beta;
};

// The bf16 GEMM against a double-precision product of the same bf16 inputs, on AMX (where present) and on the
// widened-float path, with edge blocks, both transposes, several K panels, beta 0 / 1 / 0.5 and padded rows.
class GemmBf16Test : public ::testing::TestWithParam<std::string> {};

TEST_P(GemmBf16Test, MatchesADoubleProductOfTheSameInputs) {
  selectBf16GemmBackend(GetParam());
  ASSERT_EQ(bf16GemmBackend(), GetParam());
  const Case cases[] = {{Trans::kNo, Trans::kNo, 64, 64, 64, 0.0f},    {Trans::kNo, Trans::kNo, 37, 45, 29, 1.0f},
                        {Trans::kYes, Trans::kNo, 70, 33, 1100, 0.5f}, {Trans::kNo, Trans::kYes, 100, 530, 300, 0.0f},
                        {Trans::kYes, Trans::kYes, 31, 17, 65, 1.0f},  {Trans::kNo, Trans::kNo, 1, 1, 1, 0.0f},
                        {Trans::kNo, Trans::kYes, 25, 70, 63, 1.0f},   {Trans::kYes, Trans::kNo, 13, 97, 35, 0.0f},
                        {Trans::kNo, Trans::kNo, 200, 64, 1031, 0.0f}, {Trans::kYes, Trans::kYes, 96, 32, 2, 1.0f}};
  for (const Case& c : cases) {
    const int64_t pad = 5;
    const int64_t a_rows = c.ta == Trans::kNo ? c.m : c.k, a_cols = c.ta == Trans::kNo ? c.k : c.m;
    const int64_t b_rows = c.tb == Trans::kNo ? c.k : c.n, b_cols = c.tb == Trans::kNo ? c.n : c.k;
    auto to_bf16 = [](const std::vector<double>& v) {
      std::vector<bf16> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) out[i] = toBf16(static_cast<float>(v[i]));
      return out;
    };
    auto a = to_bf16(testing::pseudoRandom(static_cast<size_t>(a_rows * (a_cols + pad)), 1));
    auto b = to_bf16(testing::pseudoRandom(static_cast<size_t>(b_rows * (b_cols + pad)), 2));
    auto c0 = testing::pseudoRandom(static_cast<size_t>(c.m * (c.n + pad)), 3);
    std::vector<float> got(c0.begin(), c0.end());
    gemmBf16(GemmBf16Call{c.ta, c.tb, c.m, c.n, c.k, a.data(), a_cols + pad, b.data(), b_cols + pad, c.beta, got.data(),
                          c.n + pad});
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n + pad; ++j) {
        const size_t at = static_cast<size_t>(i * (c.n + pad) + j);
        if (j >= c.n) {
          ASSERT_EQ(got[at], static_cast<float>(c0[at])) << "padding column written";
          continue;
        }
        double expected = c.beta == 0.0f ? 0.0 : c.beta * static_cast<double>(static_cast<float>(c0[at]));
        for (int64_t p = 0; p < c.k; ++p) {
          const bf16 x = c.ta == Trans::kNo ? a[static_cast<size_t>(i * (a_cols + pad) + p)]
                                            : a[static_cast<size_t>(p * (a_cols + pad) + i)];
          const bf16 y = c.tb == Trans::kNo ? b[static_cast<size_t>(p * (b_cols + pad) + j)]
                                            : b[static_cast<size_t>(j * (b_cols + pad) + p)];
          expected += static_cast<double>(fromBf16(x)) * fromBf16(y);
        }
        ASSERT_NEAR(got[at], expected, 1e-5 * (c.k + 1))
            << bf16GemmBackend() << " m" << c.m << " n" << c.n << " k" << c.k << " at " << i << "," << j;
      }
    }
  }
  selectBf16GemmBackend("auto");
}

INSTANTIATE_TEST_SUITE_P(Available, GemmBf16Test, ::testing::ValuesIn(availableBf16GemmBackends()),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

TEST(GemmBf16Selection, UnavailableBackendIsRefused) {
  EXPECT_THROW(selectBf16GemmBackend("tpu"), std::invalid_argument);
  EXPECT_EQ(availableBf16GemmBackends().back(), "widened-float");
}

}  // namespace
}  // namespace megascale::trainer
