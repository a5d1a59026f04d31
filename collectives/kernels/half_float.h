// Scalar 16-bit float conversions with internal linkage (static inline): the per-ISA kernel files compile
// these with different instruction sets, and internal linkage keeps the linker from handing one ISA's copy
// to another (an AVX-512 copy must never run on an AVX2-only CPU). Round to nearest even. They compile for the
// GPU too (host_device.h): the CUDA reduce kernels convert with the same code.
#pragma once

#include <cstdint>

#include "collectives/kernels/host_device.h"

namespace megascale::half_float {

static inline MSC_HOST_DEVICE float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return host_device::floatFromBits(bits);
}

static inline MSC_HOST_DEVICE uint16_t floatToHalf(float f) {
  uint32_t x = host_device::floatBits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));  // inf, nan
  if (abs >= 0x477ff000) return uint16_t(sign | 0x7c00);                                   // overflow
  if (abs < 0x38800000) {  // subnormal or zero in half
    if (abs < 0x33000000) return uint16_t(sign);
    uint32_t mant = (abs & 0x7fffff) | 0x800000;
    int shift = 126 - int(abs >> 23);
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return uint16_t(sign | half_mant);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return uint16_t(sign | ((rounded - 0x38000000) >> 13));
}

static inline MSC_HOST_DEVICE float bf16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  return host_device::floatFromBits(bits);
}

static inline MSC_HOST_DEVICE uint16_t floatToBf16(float f) {
  uint32_t x = host_device::floatBits(f);
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  uint32_t quiet_nan = (x >> 16) | 0x40u;
  return uint16_t((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);  // branch-free: vectorizes
}

}  // namespace megascale::half_float
