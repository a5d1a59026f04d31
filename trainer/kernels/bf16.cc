#include "trainer/kernels/bf16.h"

namespace megascale::trainer {

void convertToBf16(bf16* out, const float* in, int64_t count) {
#pragma omp parallel for simd schedule(static) if (count > 65536)
  for (int64_t i = 0; i < count; ++i) out[i] = toBf16(in[i]);
}

void convertFromBf16(float* out, const bf16* in, int64_t count) {
#pragma omp parallel for simd schedule(static) if (count > 65536)
  for (int64_t i = 0; i < count; ++i) out[i] = fromBf16(in[i]);
}

}  // namespace megascale::trainer
