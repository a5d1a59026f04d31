#include "trainer/kernels/bf16.h"

#include <immintrin.h>

#include "trainer/kernels/gemm_bf16_backends.h"

namespace megascale::trainer {

namespace {

constexpr int64_t kBlock = 32;  // floats per VCVTNE2PS2BF16

// VCVTNE2PS2BF16 rounds to nearest even and quiets NaNs as toBf16 does, but reads denormal inputs as zero:
// a block holding one goes through toBf16, so both paths give the same bits.
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void convertBlocks(bf16* out, const float* in, int64_t blocks) {
  const __m512i exponent = _mm512_set1_epi32(0x7f800000), mantissa = _mm512_set1_epi32(0x007fffff);
#pragma omp parallel for schedule(static) if (blocks > 2048)
  for (int64_t b = 0; b < blocks; ++b) {
    const float* src = in + b * kBlock;
    const __m512i low = _mm512_loadu_si512(src), high = _mm512_loadu_si512(src + 16);
    const __mmask16 denormal_low = _mm512_testn_epi32_mask(low, exponent) & _mm512_test_epi32_mask(low, mantissa);
    const __mmask16 denormal_high = _mm512_testn_epi32_mask(high, exponent) & _mm512_test_epi32_mask(high, mantissa);
    if ((denormal_low | denormal_high) != 0) {
      for (int64_t i = 0; i < kBlock; ++i) out[b * kBlock + i] = toBf16(src[i]);
      continue;
    }
    const __m512bh both = _mm512_cvtne2ps_pbh(_mm512_castsi512_ps(high), _mm512_castsi512_ps(low));
    _mm512_storeu_si512(out + b * kBlock, reinterpret_cast<const __m512i&>(both));
  }
}

}  // namespace

// `if (parallel : ...)`: the threshold guards only the thread team. A bare if() also switches off the simd
// (OpenMP 5.0), and tensors under the threshold ran scalar, 5x slower.
void convertToBf16(bf16* out, const float* in, int64_t count) {
  static const bool native = avx512Bf16Present();
  if (native) {
    const int64_t blocks = count / kBlock;
    convertBlocks(out, in, blocks);
    for (int64_t i = blocks * kBlock; i < count; ++i) out[i] = toBf16(in[i]);
    return;
  }
#pragma omp parallel for simd schedule(static) if (parallel : count > 65536)
  for (int64_t i = 0; i < count; ++i) out[i] = toBf16(in[i]);
}

void convertFromBf16(float* out, const bf16* in, int64_t count) {
#pragma omp parallel for simd schedule(static) if (parallel : count > 65536)
  for (int64_t i = 0; i < count; ++i) out[i] = fromBf16(in[i]);
}

}  // namespace megascale::trainer
