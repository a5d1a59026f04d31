// Element types and reduction operators: sizes, names, parsing, and conversions of the 16-bit floats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "megascale/megascale.h"

namespace megascale {

size_t dtypeSize(mscDataType_t type);
const char* dtypeName(mscDataType_t type);  // nccl-tests spelling: "float", "half", "bfloat16", "int32", ...
const char* opName(mscRedOp_t op);          // "sum", "prod", "max", "min", "avg"
bool validDtype(int type);
bool validOp(int op);
/// Accepts nccl-tests names and short forms (f32, bf16, ...). Returns false for unknown names.
bool parseDtype(const std::string& name, mscDataType_t* type);
bool parseOp(const std::string& name, mscRedOp_t* op);

/// Writes v, converted to `type` (integers wrap as C++ conversions do), into element `index` of buf.
/// Used by tests and benchmarks to build inputs and expected outputs in any dtype.
void storeAsType(mscDataType_t type, void* buf, size_t index, double v);

/// IEEE binary16 and bfloat16 <-> binary32, round to nearest even.
inline float halfToFloat(uint16_t h) {
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
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t abs = x & 0x7fffffff;
  if (abs >= 0x7f800000) return uint16_t(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0));  // inf, nan
  if (abs >= 0x477ff000) return uint16_t(sign | 0x7c00);                                   // overflow
  if (abs < 0x38800000) {  // subnormal or zero in half
    if (abs < 0x33000000) return uint16_t(sign);
    uint32_t mant = (abs & 0x7fffff) | 0x800000;
    int shift = 126 - int(abs >> 23);  // 14 + (113 - exp)
    uint32_t half_mant = mant >> (shift);
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return uint16_t(sign | half_mant);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return uint16_t(sign | ((rounded - 0x38000000) >> 13));
}

inline float bf16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);  // quiet nan
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

}  // namespace megascale
