#include "testbed/reference/reference_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace megascale::reference {

namespace {

// IEEE binary16 / bfloat16 from a finite double within range: round to nearest even on the quantum of the
// value's binade (the subnormal quantum below the smallest normal). A mantissa that rounds up to 2^(p+1)
// carries into the exponent, which the addition of the biased exponent does on its own.
uint16_t narrowFloat(double value, int mantissa_bits, int exponent_bias) {
  const uint16_t sign = std::signbit(value) ? 0x8000 : 0;
  const double magnitude = std::fabs(value);
  const int max_exponent = (1 << (15 - mantissa_bits)) - 1;  // all ones: infinity and NaN
  if (std::isnan(value)) return static_cast<uint16_t>(sign | (max_exponent << mantissa_bits) | 1 << (mantissa_bits - 1));
  if (magnitude == 0) return sign;
  const int min_exponent = 1 - exponent_bias;
  int exponent = std::ilogb(magnitude);
  if (exponent < min_exponent) exponent = min_exponent - 1;  // subnormal: the field holds 0
  const double quantum = std::ldexp(1.0, std::max(exponent, min_exponent) - mantissa_bits);
  const double steps = std::nearbyint(magnitude / quantum);  // the default rounding mode: to nearest even
  uint32_t bits;
  if (exponent < min_exponent) {
    bits = static_cast<uint32_t>(steps);  // 2^mantissa_bits steps reach the smallest normal's encoding
  } else {
    bits = (static_cast<uint32_t>(exponent + exponent_bias) << mantissa_bits) +
           static_cast<uint32_t>(steps - std::ldexp(1.0, mantissa_bits));
  }
  if (bits >= static_cast<uint32_t>(max_exponent) << mantissa_bits) bits = static_cast<uint32_t>(max_exponent) << mantissa_bits;
  return static_cast<uint16_t>(sign | bits);
}

template <typename T>
void put(void* array, size_t index, T v) {
  std::memcpy(static_cast<uint8_t*>(array) + index * sizeof(T), &v, sizeof(T));
}

constexpr uint64_t kRecordMagic = 0x6d73632d76657264ull;  // "msc-verd"

struct WrongCountRecord {
  uint64_t magic;
  int64_t rank;
  int64_t wrong;
  uint64_t checksum;
};

uint64_t checksumOf(int64_t rank, int64_t wrong) {
  uint64_t h = kRecordMagic ^ static_cast<uint64_t>(rank) * 0x9e3779b97f4a7c15ull;
  h ^= static_cast<uint64_t>(wrong) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

}  // namespace

size_t elementBytes(mscDataType_t type) {
  switch (type) {
    case mscInt8: case mscUint8: return 1;
    case mscFloat16: case mscBfloat16: return 2;
    case mscInt32: case mscUint32: case mscFloat32: return 4;
    case mscInt64: case mscUint64: case mscFloat64: return 8;
    default: return 0;
  }
}

void encode(mscDataType_t type, double value, void* array, size_t index) {
  const auto integer = static_cast<int64_t>(value);
  switch (type) {
    case mscInt8: put(array, index, static_cast<int8_t>(integer)); break;
    case mscUint8: put(array, index, static_cast<uint8_t>(integer)); break;
    case mscInt32: put(array, index, static_cast<int32_t>(integer)); break;
    case mscUint32: put(array, index, static_cast<uint32_t>(integer)); break;
    case mscInt64: put(array, index, integer); break;
    case mscUint64: put(array, index, static_cast<uint64_t>(integer)); break;
    case mscFloat32: put(array, index, static_cast<float>(value)); break;
    case mscFloat64: put(array, index, value); break;
    case mscFloat16: put(array, index, narrowFloat(value, 10, 15)); break;
    case mscBfloat16: put(array, index, narrowFloat(value, 7, 127)); break;
    default: break;
  }
}

void encodeReduced(mscDataType_t type, mscRedOp_t op, double exact, int nranks, void* array, size_t index) {
  if (op != mscAvg) return encode(type, exact, array, index);
  const bool floating = type == mscFloat16 || type == mscFloat32 || type == mscFloat64 || type == mscBfloat16;
  if (floating) return encode(type, exact / nranks, array, index);
  // The library divides the wrapped sum held in the type; for the small inputs of our checks it never wraps.
  encode(type, static_cast<double>(static_cast<int64_t>(exact) / nranks), array, index);
}

int64_t totalWrong(int64_t local_wrong, mscComm_t comm, std::string* problem) {
  int rank = 0, nranks = 0;
  if (mscCommUserRank(comm, &rank) != mscSuccess || mscCommCount(comm, &nranks) != mscSuccess || nranks <= 0) {
    *problem = "cannot read the communicator's rank and size";
    return -1;
  }
  WrongCountRecord mine{kRecordMagic, rank, local_wrong, checksumOf(rank, local_wrong)};
  std::vector<WrongCountRecord> all(static_cast<size_t>(nranks));
  mscResult_t r = mscAllGather(&mine, all.data(), sizeof(mine), mscUint8, comm);
  if (r == mscSuccess) r = mscCommSynchronize(comm);
  if (r != mscSuccess) {
    *problem = std::string("the all-gather of wrong counts failed: ") + mscGetErrorString(r) + ": " + mscGetLastError();
    return -1;
  }
  int64_t total = 0;
  for (int i = 0; i < nranks; ++i) {
    const WrongCountRecord& record = all[static_cast<size_t>(i)];
    if (record.magic != kRecordMagic || record.rank != i || record.wrong < 0 ||
        record.checksum != checksumOf(record.rank, record.wrong)) {
      *problem = "rank " + std::to_string(rank) + ": the wrong-count record of rank " + std::to_string(i) +
                 " came back corrupted from the all-gather";
      return -1;
    }
    total += record.wrong;
  }
  return total;
}

}  // namespace megascale::reference
