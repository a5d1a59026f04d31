// Every SIMD table this CPU runs is bit-identical to the scalar reference, for every dtype and op, at odd
// lengths, unaligned addresses and in place.
#include "collectives/kernels/kernel_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/dtype.h"
#include "collectives/kernels/random_operands.h"

namespace megascale::kernels {
namespace {

std::vector<const KernelTable*> runnableTables() {
  std::vector<const KernelTable*> tables;
  for (const KernelTable* t : {avx2Table(), avx512Table()}) {
    if (t != nullptr && cpuSupports(*t)) tables.push_back(t);
  }
  return tables;
}

TEST(KernelTables, ScalarIsAlwaysThereAndActiveIsRunnable) {
  EXPECT_STREQ(scalarTable().isa, "scalar");
  EXPECT_TRUE(cpuSupports(scalarTable()));
  EXPECT_TRUE(cpuSupports(activeTable()));
  std::printf("active kernels: %s\n", activeTable().isa);
}

TEST(KernelTables, EverySimdTableMatchesScalarBitForBit) {
  auto tables = runnableTables();
  if (tables.empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  std::mt19937_64 rng(42);
  for (const KernelTable* table : tables) {
    for (int t = 0; t < mscNumTypes; ++t) {
      auto type = static_cast<mscDataType_t>(t);
      size_t es = dtypeSize(type);
      for (size_t n : {size_t(1), size_t(7), size_t(31), size_t(256), size_t(1000), size_t(4099)}) {
        std::vector<uint8_t> a, b;
        fillRandom(type, a, n, rng);
        fillRandom(type, b, n, rng);
        for (int op = 0; op < kOps; ++op) {
          for (size_t misalign : {size_t(0), es}) {  // unaligned by one element
            std::vector<uint8_t> want(n * es + 64), got(n * es + 64);
            scalarTable().reduce[t][op](want.data() + misalign, a.data() + misalign, b.data() + misalign, n);
            table->reduce[t][op](got.data() + misalign, a.data() + misalign, b.data() + misalign, n);
            ASSERT_EQ(std::memcmp(want.data() + misalign, got.data() + misalign, n * es), 0)
                << table->isa << " " << dtypeName(type) << " op " << op << " n " << n << " misalign " << misalign;
          }
          std::vector<uint8_t> in_place = a, reference = a;  // dst aliases a exactly
          table->reduce[t][op](in_place.data(), in_place.data(), b.data(), n);
          scalarTable().reduce[t][op](reference.data(), reference.data(), b.data(), n);
          ASSERT_EQ(std::memcmp(in_place.data(), reference.data(), n * es), 0) << table->isa << " in place";
        }
        std::vector<uint8_t> d1 = a, d2 = a;
        table->divide[t](d1.data(), n, 3);
        scalarTable().divide[t](d2.data(), n, 3);
        ASSERT_EQ(std::memcmp(d1.data(), d2.data(), n * es), 0) << table->isa << " divide " << dtypeName(type);
      }
    }
  }
}

TEST(KernelTables, SixteenBitResultsRoundOnceToNearestEven) {
  // 1 + 2^-11 is halfway between two halves; computing in float then rounding once gives the even one.
  for (const KernelTable* table : {&scalarTable(), avx2Table(), avx512Table()}) {
    if (table == nullptr || !cpuSupports(*table)) continue;
    uint16_t a[9], b[9], d[9];
    for (int i = 0; i < 9; ++i) {
      a[i] = floatToHalf(1.0f);
      b[i] = floatToHalf(std::ldexp(1.0f, -11));
    }
    table->reduce[mscFloat16][0](d, a, b, 9);
    for (int i = 0; i < 9; ++i) EXPECT_EQ(halfToFloat(d[i]), 1.0f) << table->isa;
  }
}

}  // namespace
}  // namespace megascale::kernels
