#include "collectives/reduce_kernels.h"

#include <algorithm>
#include <cstdint>

#include "collectives/dtype.h"

namespace megascale {

namespace {

struct Sum {
  template <typename T>
  static T apply(T a, T b) { return static_cast<T>(a + b); }
};
struct Prod {
  template <typename T>
  static T apply(T a, T b) { return static_cast<T>(a * b); }
};
struct Max {
  template <typename T>
  static T apply(T a, T b) { return std::max(a, b); }
};
struct Min {
  template <typename T>
  static T apply(T a, T b) { return std::min(a, b); }
};

// Plain loops over restrict-free pointers: the compiler vectorizes them at -O2/-O3 when types allow.
// SIMD dispatch by CPU (AVX2/AVX-512) is the next step for this file.
template <typename Op, typename T>
void reduceNative(void* dst, const void* a, const void* b, size_t count) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < count; ++i) d[i] = Op::apply(x[i], y[i]);
}

// 16-bit floats compute in float and round once per element, as NCCL does on the CPU path.
template <typename Op, float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void reduceHalf(void* dst, const void* a, const void* b, size_t count) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  for (size_t i = 0; i < count; ++i) d[i] = FromFloat(Op::apply(ToFloat(x[i]), ToFloat(y[i])));
}

template <typename Op>
void reduceWithOp(mscDataType_t type, void* dst, const void* a, const void* b, size_t count) {
  switch (type) {
    case mscInt8: return reduceNative<Op, int8_t>(dst, a, b, count);
    case mscUint8: return reduceNative<Op, uint8_t>(dst, a, b, count);
    case mscInt32: return reduceNative<Op, int32_t>(dst, a, b, count);
    case mscUint32: return reduceNative<Op, uint32_t>(dst, a, b, count);
    case mscInt64: return reduceNative<Op, int64_t>(dst, a, b, count);
    case mscUint64: return reduceNative<Op, uint64_t>(dst, a, b, count);
    case mscFloat32: return reduceNative<Op, float>(dst, a, b, count);
    case mscFloat64: return reduceNative<Op, double>(dst, a, b, count);
    case mscFloat16: return reduceHalf<Op, halfToFloat, floatToHalf>(dst, a, b, count);
    case mscBfloat16: return reduceHalf<Op, bf16ToFloat, floatToBf16>(dst, a, b, count);
    default: return;
  }
}

template <typename T>
void divideNative(void* buf, size_t count, int divisor) {
  T* p = static_cast<T*>(buf);
  for (size_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] / static_cast<T>(divisor));
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void divideHalf(void* buf, size_t count, int divisor) {
  uint16_t* p = static_cast<uint16_t*>(buf);
  for (size_t i = 0; i < count; ++i) p[i] = FromFloat(ToFloat(p[i]) / static_cast<float>(divisor));
}

}  // namespace

void reduceElements(mscDataType_t type, mscRedOp_t op, void* dst, const void* a, const void* b, size_t count) {
  switch (op) {
    case mscSum:
    case mscAvg: return reduceWithOp<Sum>(type, dst, a, b, count);
    case mscProd: return reduceWithOp<Prod>(type, dst, a, b, count);
    case mscMax: return reduceWithOp<Max>(type, dst, a, b, count);
    case mscMin: return reduceWithOp<Min>(type, dst, a, b, count);
    default: return;
  }
}

void finishAverage(mscDataType_t type, void* buf, size_t count, int divisor) {
  switch (type) {
    case mscInt8: return divideNative<int8_t>(buf, count, divisor);
    case mscUint8: return divideNative<uint8_t>(buf, count, divisor);
    case mscInt32: return divideNative<int32_t>(buf, count, divisor);
    case mscUint32: return divideNative<uint32_t>(buf, count, divisor);
    case mscInt64: return divideNative<int64_t>(buf, count, divisor);
    case mscUint64: return divideNative<uint64_t>(buf, count, divisor);
    case mscFloat32: return divideNative<float>(buf, count, divisor);
    case mscFloat64: return divideNative<double>(buf, count, divisor);
    case mscFloat16: return divideHalf<halfToFloat, floatToHalf>(buf, count, divisor);
    case mscBfloat16: return divideHalf<bf16ToFloat, floatToBf16>(buf, count, divisor);
    default: return;
  }
}

}  // namespace megascale
