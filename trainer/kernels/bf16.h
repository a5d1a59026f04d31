// bfloat16 storage for mixed precision: the top 16 bits of an IEEE float. Conversions round to nearest even
// (NaN stays NaN) and are plain integer arithmetic, so the loops over whole tensors vectorize.
#pragma once

#include <bit>
#include <cstdint>

namespace megascale::trainer {

using bf16 = uint16_t;

inline bf16 toBf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16>((bits >> 16) | 0x40);  // quiet NaN
  return static_cast<bf16>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline float fromBf16(bf16 x) { return std::bit_cast<float>(static_cast<uint32_t>(x) << 16); }

/// out[i] = toBf16(in[i]) for a whole tensor (multi-threaded).
void convertToBf16(bf16* out, const float* in, int64_t count);
/// out[i] = fromBf16(in[i]) for a whole tensor (multi-threaded).
void convertFromBf16(float* out, const bf16* in, int64_t count);

}  // namespace megascale::trainer
