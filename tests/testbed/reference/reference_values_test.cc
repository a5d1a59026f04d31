// testbed/reference encodes expected elements on its own: known bit patterns, ties to even, and agreement
// with the library's conversions on every input the data checks use (an independent second opinion).
#include "testbed/reference/reference_values.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "collectives/dtype.h"
#include "collectives/reduce_kernels.h"

namespace megascale::reference {
namespace {

uint16_t bits16(mscDataType_t type, double v) {
  uint16_t out = 0;
  encode(type, v, &out, 0);
  return out;
}

TEST(ReferenceValues, HalfPrecisionBitPatterns) {
  EXPECT_EQ(bits16(mscFloat16, 1.0), 0x3c00);
  EXPECT_EQ(bits16(mscFloat16, -2.0), 0xc000);
  EXPECT_EQ(bits16(mscFloat16, 0.5), 0x3800);
  EXPECT_EQ(bits16(mscFloat16, 65504.0), 0x7bff);
  EXPECT_EQ(bits16(mscFloat16, 1e6), 0x7c00);             // overflow: infinity
  EXPECT_EQ(bits16(mscFloat16, 1.0 / 3), 0x3555);
  EXPECT_EQ(bits16(mscFloat16, 0x1p-24), 0x0001);         // the smallest subnormal
  EXPECT_EQ(bits16(mscFloat16, 0x1p-14), 0x0400);         // the smallest normal
  EXPECT_EQ(bits16(mscFloat16, 2049.0), 0x6800);          // a tie rounds to even: 2048
  EXPECT_EQ(bits16(mscFloat16, 2051.0), 0x6802);          // ... and up to 2052
  EXPECT_EQ(bits16(mscFloat16, 2047.5), 0x6800);          // the mantissa carries into the exponent
  EXPECT_EQ(bits16(mscBfloat16, 1.0), 0x3f80);
  EXPECT_EQ(bits16(mscBfloat16, 1.0 / 3), 0x3eab);
  EXPECT_EQ(bits16(mscBfloat16, 257.0), 0x4380);          // a tie: 256
  EXPECT_EQ(bits16(mscBfloat16, 259.0), 0x4382);          // a tie: 260
}

TEST(ReferenceValues, AvgDividesOnceAndIntegersTruncate) {
  int32_t i = 0;
  encodeReduced(mscInt32, mscAvg, 7, 2, &i, 0);
  EXPECT_EQ(i, 3);
  encodeReduced(mscInt32, mscAvg, -7, 2, &i, 0);
  EXPECT_EQ(i, -3);
  float f = 0;
  encodeReduced(mscFloat32, mscAvg, 10, 3, &f, 0);
  EXPECT_EQ(f, 10.0f / 3.0f);
  encodeReduced(mscFloat32, mscSum, 10, 3, &f, 0);
  EXPECT_EQ(f, 10.0f);
}

// Every dtype and op on the values the checks produce (small integers, their products, their averages over
// 1..8 ranks) agrees with the library's own conversion and average pass, so neither side drifts unnoticed.
TEST(ReferenceValues, AgreesWithTheLibraryOnTheCheckedValues) {
  const mscDataType_t types[] = {mscInt8,    mscUint8,   mscInt32,   mscUint32,  mscInt64,
                                 mscUint64,  mscFloat16, mscFloat32, mscFloat64, mscBfloat16};
  for (mscDataType_t type : types) {
    const size_t es = elementBytes(type);
    ASSERT_EQ(es, dtypeSize(type));
    for (int nranks = 1; nranks <= 8; ++nranks) {
      for (int exact = 0; exact <= 8 * 7; ++exact) {
        for (mscRedOp_t op : {mscSum, mscAvg}) {
          std::vector<uint8_t> ours(es), library(es);
          encodeReduced(type, op, exact, nranks, ours.data(), 0);
          storeAsType(type, library.data(), 0, exact);
          if (op == mscAvg) finishAverage(type, library.data(), 1, nranks);
          EXPECT_EQ(0, std::memcmp(ours.data(), library.data(), es))
              << dtypeName(type) << " " << opName(op) << " of " << exact << " over " << nranks;
        }
      }
    }
  }
}

}  // namespace
}  // namespace megascale::reference
