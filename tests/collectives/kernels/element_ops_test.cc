// The element bodies the CUDA kernels compute with (kernels/element_ops.inc, kernels/half_float.h), compiled here
// as host code: element by element they give the host kernel tables' results bit for bit, for every dtype, op
// and the average's division. The CUDA kernels (kernels/cuda/reduce_kernels.cu) are these bodies in a grid-stride
// loop, so a GPU reduction is the host's for the same operands.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#include "collectives/dtype.h"
#include "collectives/kernels/half_float.h"
#include "collectives/kernels/host_device.h"
#include "collectives/kernels/kernel_table.h"
#include "collectives/kernels/random_operands.h"

namespace megascale::kernels {
namespace {
#include "collectives/kernels/element_ops.inc"

// dst[i] = Element::apply(a[i], b[i]) over storage type T, as a kernel thread computes element i.
template <typename Element, typename T>
void elementLoop(void* dst, const void* a, const void* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    T x, y;
    std::memcpy(&x, static_cast<const uint8_t*>(a) + i * sizeof(T), sizeof(T));
    std::memcpy(&y, static_cast<const uint8_t*>(b) + i * sizeof(T), sizeof(T));
    const T r = Element::apply(x, y);
    std::memcpy(static_cast<uint8_t*>(dst) + i * sizeof(T), &r, sizeof(T));
  }
}

template <typename Op>
void elementReduce(mscDataType_t type, void* dst, const void* a, const void* b, size_t n) {
  switch (type) {
    case mscInt8: return elementLoop<Op, int8_t>(dst, a, b, n);
    case mscUint8: return elementLoop<Op, uint8_t>(dst, a, b, n);
    case mscInt32: return elementLoop<Op, int32_t>(dst, a, b, n);
    case mscUint32: return elementLoop<Op, uint32_t>(dst, a, b, n);
    case mscInt64: return elementLoop<Op, int64_t>(dst, a, b, n);
    case mscUint64: return elementLoop<Op, uint64_t>(dst, a, b, n);
    case mscFloat32: return elementLoop<Op, float>(dst, a, b, n);
    case mscFloat64: return elementLoop<Op, double>(dst, a, b, n);
    case mscFloat16: return elementLoop<HalfOp<Op>, uint16_t>(dst, a, b, n);
    case mscBfloat16: return elementLoop<Bf16Op<Op>, uint16_t>(dst, a, b, n);
    default: FAIL() << "dtype " << type;
  }
}

void elementReduce(mscDataType_t type, int op, void* dst, const void* a, const void* b, size_t n) {
  switch (op) {
    case 0: return elementReduce<Sum>(type, dst, a, b, n);
    case 1: return elementReduce<Prod>(type, dst, a, b, n);
    case 2: return elementReduce<Max>(type, dst, a, b, n);
    default: return elementReduce<Min>(type, dst, a, b, n);
  }
}

template <typename T>
void elementDivide(void* buf, size_t n, int divisor) {
  for (size_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, static_cast<uint8_t*>(buf) + i * sizeof(T), sizeof(T));
    x = Divide::apply(x, static_cast<T>(divisor));
    std::memcpy(static_cast<uint8_t*>(buf) + i * sizeof(T), &x, sizeof(T));
  }
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void elementDivideSixteen(void* buf, size_t n, int divisor) {
  auto* p = static_cast<uint16_t*>(buf);
  for (size_t i = 0; i < n; ++i) p[i] = Narrow(Divide::apply(Widen(p[i]), static_cast<float>(divisor)));
}

void elementDivide(mscDataType_t type, void* buf, size_t n, int divisor) {
  switch (type) {
    case mscInt8: return elementDivide<int8_t>(buf, n, divisor);
    case mscUint8: return elementDivide<uint8_t>(buf, n, divisor);
    case mscInt32: return elementDivide<int32_t>(buf, n, divisor);
    case mscUint32: return elementDivide<uint32_t>(buf, n, divisor);
    case mscInt64: return elementDivide<int64_t>(buf, n, divisor);
    case mscUint64: return elementDivide<uint64_t>(buf, n, divisor);
    case mscFloat32: return elementDivide<float>(buf, n, divisor);
    case mscFloat64: return elementDivide<double>(buf, n, divisor);
    case mscFloat16: return elementDivideSixteen<half_float::halfToFloat, half_float::floatToHalf>(buf, n, divisor);
    case mscBfloat16: return elementDivideSixteen<half_float::bf16ToFloat, half_float::floatToBf16>(buf, n, divisor);
    default: FAIL() << "dtype " << type;
  }
}

TEST(ElementOps, EveryDtypeAndOpEqualsTheHostTablesBitForBit) {
  std::mt19937_64 rng(7);
  const size_t n = 4099;
  for (const KernelTable* table : {&scalarTable(), &activeTable()}) {
    for (int t = 0; t < mscNumTypes; ++t) {
      const auto type = static_cast<mscDataType_t>(t);
      const size_t es = dtypeSize(type);
      std::vector<uint8_t> a, b;
      fillRandom(type, a, n, rng);
      fillRandom(type, b, n, rng);
      for (int op = 0; op < kOps; ++op) {
        std::vector<uint8_t> want(n * es), got(n * es);
        table->reduce[t][op](want.data(), a.data(), b.data(), n);
        elementReduce(type, op, got.data(), a.data(), b.data(), n);
        EXPECT_EQ(std::memcmp(want.data(), got.data(), n * es), 0) << table->isa << " " << dtypeName(type) << " op " << op;
      }
      for (int divisor : {3, 7}) {
        std::vector<uint8_t> want(a.begin(), a.begin() + static_cast<long>(n * es)), got = want;
        table->divide[t](want.data(), n, divisor);
        elementDivide(type, got.data(), n, divisor);
        EXPECT_EQ(std::memcmp(want.data(), got.data(), n * es), 0) << table->isa << " divide " << dtypeName(type);
      }
    }
  }
}

}  // namespace
}  // namespace megascale::kernels
