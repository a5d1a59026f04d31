#include "collectives/reduce_kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "collectives/dtype.h"

namespace megascale {
namespace {

TEST(HalfFloat, RoundTripsEveryHalfValue) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f))));
      continue;
    }
    EXPECT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

TEST(HalfFloat, RoundsToNearestEven) {
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 1.0f / 2048)), 1.0f);                 // tie -> even (down)
  EXPECT_EQ(halfToFloat(floatToHalf(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);   // tie -> even (up)
  EXPECT_EQ(halfToFloat(floatToHalf(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(halfToFloat(floatToHalf(65520.0f))));
  EXPECT_EQ(halfToFloat(floatToHalf(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest subnormal
}

TEST(Bfloat16, RoundTripsAndRounds) {
  for (uint32_t b = 0; b < 0x10000; b += 7) {
    float f = bf16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(floatToBf16(f), b);
    }
  }
  EXPECT_EQ(bf16ToFloat(floatToBf16(1.0f + 1.0f / 256)), 1.0f);  // tie -> even
}

template <typename T>
void checkNative(mscDataType_t type) {
  std::vector<T> a = {T(1), T(5), T(3), T(-2 + 0 * sizeof(T))}, b = {T(4), T(2), T(3), T(7)}, d(4);
  if (std::is_unsigned_v<T>) a[3] = T(9);
  auto run = [&](mscRedOp_t op) {
    reduceElements(type, op, d.data(), a.data(), b.data(), a.size());
    return d;
  };
  auto sum = run(mscSum);
  auto prod = run(mscProd);
  auto mx = run(mscMax);
  auto mn = run(mscMin);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(sum[i], T(a[i] + b[i])) << dtypeName(type);
    EXPECT_EQ(prod[i], T(a[i] * b[i])) << dtypeName(type);
    EXPECT_EQ(mx[i], std::max(a[i], b[i])) << dtypeName(type);
    EXPECT_EQ(mn[i], std::min(a[i], b[i])) << dtypeName(type);
  }
  std::vector<T> avg = {T(8), T(9)};
  finishAverage(type, avg.data(), avg.size(), 4);
  EXPECT_EQ(avg[0], T(2));
  EXPECT_EQ(avg[1], std::is_integral_v<T> ? T(2) : T(2.25));
}

TEST(ReduceKernels, EveryNativeTypeAndOp) {
  checkNative<int8_t>(mscInt8);
  checkNative<uint8_t>(mscUint8);
  checkNative<int32_t>(mscInt32);
  checkNative<uint32_t>(mscUint32);
  checkNative<int64_t>(mscInt64);
  checkNative<uint64_t>(mscUint64);
  checkNative<float>(mscFloat32);
  checkNative<double>(mscFloat64);
}

TEST(ReduceKernels, SixteenBitFloats) {
  struct Format {
    mscDataType_t type;
    uint16_t (*to)(float);
    float (*from)(uint16_t);
  };
  for (auto [type, to, from] : {Format{mscFloat16, floatToHalf, halfToFloat}, Format{mscBfloat16, floatToBf16, bf16ToFloat}}) {
    std::vector<uint16_t> a = {to(1.5f), to(-2.0f), to(3.0f)}, b = {to(2.0f), to(4.0f), to(-3.0f)}, d(3);
    reduceElements(type, mscSum, d.data(), a.data(), b.data(), 3);
    EXPECT_EQ(from(d[0]), 3.5f);
    EXPECT_EQ(from(d[1]), 2.0f);
    EXPECT_EQ(from(d[2]), 0.0f);
    reduceElements(type, mscProd, d.data(), a.data(), b.data(), 3);
    EXPECT_EQ(from(d[1]), -8.0f);
    reduceElements(type, mscMax, d.data(), a.data(), b.data(), 3);
    EXPECT_EQ(from(d[2]), 3.0f);
    reduceElements(type, mscMin, d.data(), a.data(), b.data(), 3);
    EXPECT_EQ(from(d[1]), -2.0f);
  }
}

TEST(ReduceKernels, InPlaceAliasing) {
  std::vector<float> a = {1, 2, 3}, b = {10, 20, 30};
  reduceElements(mscFloat32, mscSum, a.data(), a.data(), b.data(), 3);
  EXPECT_EQ(a, (std::vector<float>{11, 22, 33}));
}

TEST(Dtype, NamesParseBack) {
  for (int t = 0; t < mscNumTypes; ++t) {
    mscDataType_t parsed;
    ASSERT_TRUE(parseDtype(dtypeName(static_cast<mscDataType_t>(t)), &parsed));
    EXPECT_EQ(parsed, t);
  }
  mscDataType_t x;
  EXPECT_FALSE(parseDtype("float128", &x));
  EXPECT_EQ(dtypeSize(mscBfloat16), 2u);
  EXPECT_FALSE(validDtype(mscNumTypes));
  EXPECT_FALSE(validOp(-1));
}

}  // namespace
}  // namespace megascale
