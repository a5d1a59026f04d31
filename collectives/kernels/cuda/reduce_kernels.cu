// The CUDA engine's kernels (memory/cuda_space.cc launches them by name through the driver API): dst = a op b
// for every dtype and op, and the average's division, each a grid-stride loop over the element bodies the host
// kernels use (element_ops.inc), so a device reduction is the host's bit for bit (NaN payloads aside: a GPU
// returns its canonical NaN). Built with --fmad=false: nothing may contract into an FMA that the host does not.
// Names: msc_reduce_<dtype>_<op> and msc_divide_<dtype> (cudaKernelName in memory/cuda_space.cc).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "collectives/kernels/half_float.h"
#include "collectives/kernels/host_device.h"

namespace megascale::kernels {
namespace {
#include "collectives/kernels/element_ops.inc"

template <typename Element, typename T>
__device__ void reduceLoop(T* dst, const T* a, const T* b, unsigned long long n) {
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = Element::apply(a[i], b[i]);
  }
}

template <typename T>
__device__ void divideLoop(T* buf, unsigned long long n, int divisor) {
  const T d = static_cast<T>(divisor);
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    buf[i] = Divide::apply(buf[i], d);
  }
}

struct HalfConvert {
  static __device__ float widen(uint16_t h) { return half_float::halfToFloat(h); }
  static __device__ uint16_t narrow(float f) { return half_float::floatToHalf(f); }
};
struct Bf16Convert {
  static __device__ float widen(uint16_t h) { return half_float::bf16ToFloat(h); }
  static __device__ uint16_t narrow(float f) { return half_float::floatToBf16(f); }
};

// 16-bit floats divide in float and round once, as the host's divideSixteenBit.
template <typename Convert>
__device__ void divideSixteenBitLoop(uint16_t* buf, unsigned long long n, int divisor) {
  const float d = static_cast<float>(divisor);
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    buf[i] = Convert::narrow(Divide::apply(Convert::widen(buf[i]), d));
  }
}

}  // namespace
}  // namespace megascale::kernels

using namespace megascale::kernels;

#define MSC_REDUCE_NATIVE(name, T, op)                                                                        \
  extern "C" __global__ void msc_reduce_##name##_##op(void* dst, const void* a, const void* b, unsigned long long n) { \
    reduceLoop<op##Element, T>(static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), n);          \
  }
#define MSC_REDUCE_SIXTEEN(name, wrapper, op)                                                                 \
  extern "C" __global__ void msc_reduce_##name##_##op(void* dst, const void* a, const void* b, unsigned long long n) { \
    reduceLoop<wrapper<op##Element>, uint16_t>(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(a),          \
                                               static_cast<const uint16_t*>(b), n);                                     \
  }
#define MSC_DIVIDE_NATIVE(name, T)                                                               \
  extern "C" __global__ void msc_divide_##name(void* buf, unsigned long long n, int divisor) {   \
    divideLoop<T>(static_cast<T*>(buf), n, divisor);                                              \
  }

using sumElement = Sum;
using prodElement = Prod;
using maxElement = Max;
using minElement = Min;

#define MSC_ALL_OPS(MACRO, name, T) MACRO(name, T, sum) MACRO(name, T, prod) MACRO(name, T, max) MACRO(name, T, min)

MSC_ALL_OPS(MSC_REDUCE_NATIVE, i8, int8_t)
MSC_ALL_OPS(MSC_REDUCE_NATIVE, u8, uint8_t)
MSC_ALL_OPS(MSC_REDUCE_NATIVE, i32, int32_t)
MSC_ALL_OPS(MSC_REDUCE_NATIVE, u32, uint32_t)
MSC_ALL_OPS(MSC_REDUCE_NATIVE, i64, int64_t)
MSC_ALL_OPS(MSC_REDUCE_NATIVE, u64, uint64_t)
MSC_ALL_OPS(MSC_REDUCE_NATIVE, f32, float)
MSC_ALL_OPS(MSC_REDUCE_NATIVE, f64, double)
MSC_ALL_OPS(MSC_REDUCE_SIXTEEN, f16, HalfOp)
MSC_ALL_OPS(MSC_REDUCE_SIXTEEN, bf16, Bf16Op)

MSC_DIVIDE_NATIVE(i8, int8_t)
MSC_DIVIDE_NATIVE(u8, uint8_t)
MSC_DIVIDE_NATIVE(i32, int32_t)
MSC_DIVIDE_NATIVE(u32, uint32_t)
MSC_DIVIDE_NATIVE(i64, int64_t)
MSC_DIVIDE_NATIVE(u64, uint64_t)
MSC_DIVIDE_NATIVE(f32, float)
MSC_DIVIDE_NATIVE(f64, double)

extern "C" __global__ void msc_divide_f16(void* buf, unsigned long long n, int divisor) {
  divideSixteenBitLoop<HalfConvert>(static_cast<uint16_t*>(buf), n, divisor);
}
extern "C" __global__ void msc_divide_bf16(void* buf, unsigned long long n, int divisor) {
  divideSixteenBitLoop<Bf16Convert>(static_cast<uint16_t*>(buf), n, divisor);
}
