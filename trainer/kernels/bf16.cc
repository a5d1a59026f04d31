#include "trainer/kernels/bf16.h"

namespace megascale::trainer {

// `if (parallel : ...)`: the threshold guards only the thread team. A bare if() also switches off the simd
// (OpenMP 5.0), and tensors under the threshold ran scalar, 5x slower.
void convertToBf16(bf16* out, const float* in, int64_t count) {
#pragma omp parallel for simd schedule(static) if (parallel : count > 65536)
  for (int64_t i = 0; i < count; ++i) out[i] = toBf16(in[i]);
}

void convertFromBf16(float* out, const bf16* in, int64_t count) {
#pragma omp parallel for simd schedule(static) if (parallel : count > 65536)
  for (int64_t i = 0; i < count; ++i) out[i] = fromBf16(in[i]);
}

}  // namespace megascale::trainer
