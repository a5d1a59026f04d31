// Operands for kernel tests: random bits for integers; for floats, finite values of varied magnitude with zeros,
// infinities and half subnormals among them (NaN payloads may differ between conversions and are not part of the
// contract).
#pragma once

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/dtype.h"

namespace megascale::kernels {

inline void fillRandom(mscDataType_t type, std::vector<uint8_t>& buf, size_t n, std::mt19937_64& rng) {
  buf.resize(n * dtypeSize(type) + 64);
  std::uniform_real_distribution<double> mantissa(-2.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 20);
  for (size_t i = 0; i < n; ++i) {
    bool is_float = type == mscFloat16 || type == mscBfloat16 || type == mscFloat32 || type == mscFloat64;
    if (!is_float) {
      uint64_t bits = rng();
      std::memcpy(buf.data() + i * dtypeSize(type), &bits, dtypeSize(type));
      continue;
    }
    double v = std::ldexp(mantissa(rng), exponent(rng));
    if (i % 97 == 0) v = 0.0;
    if (i % 89 == 0) v = -INFINITY;
    if (i % 83 == 0) v = std::ldexp(1.0, -20);  // a half subnormal
    storeAsType(type, buf.data(), i, v);
  }
}

}  // namespace megascale::kernels
