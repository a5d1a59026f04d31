// exp for float written as plain arithmetic, so `omp simd` loops vectorize it instead of calling libm once per
// element (glibc exposes its vector expf only under -ffast-math). Relative error about 2 ulp over the whole
// float range; inputs are clamped to [-87.3, 88.3]. double keeps libm's exp: the PyTorch
// oracle tests compare doubles to 1e-10.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace megascale::trainer {

inline float fastExp(float x) {
  x = std::min(std::max(x, -87.3f), 88.3f);
  // Round x / ln2 to the nearest integer by adding 1.5 * 2^23: the sum's low mantissa bits are that integer.
  // (The clamp above vectorizes only with -fno-trapping-math, which the trainer's kernels are built with.)
  const float shifted = x * 1.44269504f + 12582912.0f;
  const float n = shifted - 12582912.0f;
  // r = x - n ln2 in two parts for accuracy; |r| <= ln2 / 2.
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  // e^r by its Taylor/minimax polynomial (Cephes' coefficients).
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (std::bit_cast<int32_t>(shifted) - 0x4B400000 + 127) << 23;
  return p * std::bit_cast<float>(bits);
}

template <typename T>
inline T expOf(T x) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return fastExp(x);
  } else {
    return std::exp(x);
  }
}

/// tanh through exp for float (vectorizes); libm's for double.
template <typename T>
inline T tanhOf(T x) {
  if constexpr (sizeof(T) == sizeof(float)) {
    return T(2) / (T(1) + fastExp(T(-2) * x)) - T(1);
  } else {
    return std::tanh(x);
  }
}

}  // namespace megascale::trainer
