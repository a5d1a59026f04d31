// bf16 GEMM with AVX512-BF16 (for CPUs that have it but no AMX, e.g. Cooper Lake, Zen 4/5). VDPBF16PS
// multiplies 16 pairs of bf16 and adds each pair's sum to an fp32 lane, so K is consumed two at a time: op(B)
// is packed as [k/2][32 columns][2] (two zmm per k pair), op(A) as [k/2][12 rows][2], and one 32-bit broadcast
// of a row's pair feeds two VDPBF16PS. Same 12 x 32 register tile and blocking as the float kernel.
#include <immintrin.h>

#include <cstring>

#include "trainer/kernels/gemm_bf16_backends.h"
#include "trainer/kernels/gemm_blocked.h"

namespace megascale::trainer {

namespace {

struct Bf16Kernel {
  using Call = GemmBf16Call;
  using Packed = bf16;
  static constexpr int64_t kMr = 12, kNr = 32;
  static constexpr int64_t kKc = 512, kMc = 96, kNc = 2048, kColumnsPerTask = 256;

  // Elements of a sliver `width` wide over kc (rounded up to whole pairs).
  static int64_t packedSize(int64_t kc, int64_t width) { return (kc + 1) / 2 * 2 * width; }

  // Rows p and p+1 of op(B) interleave; a transposed B already holds each column's k values side by side.
  static void packB(const Call& c, int64_t pc, int64_t kc, int64_t col0, int64_t cols, bf16* out) {
    std::memset(out, 0, static_cast<size_t>(packedSize(kc, kNr)) * sizeof(bf16));
    if (c.trans_b == Trans::kNo) {
      for (int64_t p = 0; p < kc; ++p) {
        const bf16* row = c.b + (pc + p) * c.ldb + col0;
        bf16* dst = out + (p / 2) * 2 * kNr + (p % 2);
        for (int64_t j = 0; j < cols; ++j) dst[2 * j] = row[j];
      }
      return;
    }
    for (int64_t j = 0; j < cols; ++j) {
      const bf16* column = c.b + (col0 + j) * c.ldb + pc;
      for (int64_t p = 0; p + 1 < kc; p += 2) std::memcpy(out + (p / 2) * 2 * kNr + 2 * j, column + p, 2 * sizeof(bf16));
      if (kc % 2 == 1) out[(kc / 2) * 2 * kNr + 2 * j] = column[kc - 1];
    }
  }

  // A row's k values pair up as they lie when A is not transposed; a transposed A is read k-row by k-row.
  static void packA(const Call& c, int64_t ic, int64_t mc, int64_t pc, int64_t kc, bf16* out) {
    for (int64_t s = 0; s * kMr < mc; ++s) {
      bf16* sliver = out + s * packedSize(kc, kMr);
      std::memset(sliver, 0, static_cast<size_t>(packedSize(kc, kMr)) * sizeof(bf16));
      const int64_t rows = std::min(kMr, mc - s * kMr), i0 = ic + s * kMr;
      if (c.trans_a == Trans::kNo) {
        for (int64_t r = 0; r < rows; ++r) {
          const bf16* row = c.a + (i0 + r) * c.lda + pc;
          for (int64_t p = 0; p + 1 < kc; p += 2) std::memcpy(sliver + (p / 2) * 2 * kMr + 2 * r, row + p, 2 * sizeof(bf16));
          if (kc % 2 == 1) sliver[(kc / 2) * 2 * kMr + 2 * r] = row[kc - 1];
        }
        continue;
      }
      for (int64_t p = 0; p < kc; ++p) {
        const bf16* krow = c.a + (pc + p) * c.lda + i0;
        bf16* dst = sliver + (p / 2) * 2 * kMr + (p % 2);
        for (int64_t r = 0; r < rows; ++r) dst[2 * r] = krow[r];
      }
    }
  }

  __attribute__((target("avx512f,avx512bf16"))) static void micro(int64_t kc, const bf16* a, const bf16* b, float* c,
                                                                   int64_t ldc, bool accumulate) {
    __m512 acc[kMr][2];
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t pair = 0; pair < (kc + 1) / 2; ++pair) {
      const __m512i b0 = _mm512_load_si512(b), b1 = _mm512_load_si512(b + 32);
#pragma GCC unroll 12
      for (int r = 0; r < kMr; ++r) {
        uint32_t both;
        std::memcpy(&both, a + 2 * r, sizeof(both));
        const __m512i ar = _mm512_set1_epi32(static_cast<int>(both));
        acc[r][0] = _mm512_dpbf16_ps(acc[r][0], (__m512bh)ar, (__m512bh)b0);
        acc[r][1] = _mm512_dpbf16_ps(acc[r][1], (__m512bh)ar, (__m512bh)b1);
      }
      a += 2 * kMr;
      b += 2 * kNr;
    }
    storeTile<kMr>(acc, c, ldc, accumulate);
  }
};

}  // namespace

void gemmAvx512Bf16(const GemmBf16Call& c) { blockedGemm<Bf16Kernel>(c); }

}  // namespace megascale::trainer
