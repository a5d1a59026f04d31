// Code that compiles for the host and, under nvcc, for the GPU too: the reduce kernels' element bodies and the
// 16-bit float conversions are written once (element_ops.inc, half_float.h), so that a device reduction is bit
// for bit the host's for the same operands.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__CUDACC__)
#define MSC_HOST_DEVICE __host__ __device__
#else
#define MSC_HOST_DEVICE
#endif

namespace megascale::host_device {

// Bit casts between a float and its bits (std::bit_cast is not device code; the intrinsics are not host code).
static inline MSC_HOST_DEVICE uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}

static inline MSC_HOST_DEVICE float floatFromBits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  return std::bit_cast<float>(bits);
#endif
}

}  // namespace megascale::host_device
