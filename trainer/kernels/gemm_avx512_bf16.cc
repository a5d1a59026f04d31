// bf16 GEMM with AVX512-BF16 (for CPUs that have it but no AMX, e.g. Cooper Lake, Zen 4/5). VDPBF16PS
// multiplies 16 pairs of bf16 and adds each pair's sum to an fp32 lane, so K is consumed two at a time: op(B)
// is packed as [k/2][32 columns][2] (two zmm per k pair), op(A) as [k/2][12 rows][2], and one 32-bit broadcast
// of a row's pair feeds two VDPBF16PS. Same 12 x 32 register tile and blocking as the float kernel.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "trainer/kernels/gemm_bf16_backends.h"
#include "trainer/kernels/gemm_blocked.h"

namespace megascale::trainer {

namespace {

// Lanes [0, count) of 32 bf16 from `p`, zeros above: a sliver's edge and an odd K read no further than the data.
__attribute__((target("avx512f,avx512bw"))) inline __m512i loadBf16(const bf16* p, int64_t count) {
  const auto lanes = static_cast<__mmask32>((uint64_t{1} << std::min<int64_t>(count, 32)) - 1);
  return _mm512_maskz_loadu_epi16(lanes, p);
}

// The 32 pairs (even[j], odd[j]) as 64 bf16: j < 16 in `low`, the rest in `high`.
__attribute__((target("avx512f,avx512bw"))) inline void interleavePairs(__m512i even, __m512i odd, __m512i& low,
                                                                        __m512i& high) {
  alignas(64) static constexpr uint16_t kLow[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                     24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  low = _mm512_permutex2var_epi16(even, _mm512_load_si512(kLow), odd);
  high = _mm512_permutex2var_epi16(even, _mm512_load_si512(kHigh), odd);
}

// In place: v[i] lane j becomes v[j] lane i (16 x 16 32-bit words). Pairs within 128-bit lanes, then 64-bit
// halves, then 128-bit lanes gathered in two rounds of shuffles. (The zero-masking forms
// with every lane on are the plain instructions; GCC 12 warns of the plain intrinsics' undefined operand.)
__attribute__((target("avx512f"))) inline void transpose16x16(__m512i (&v)[16]) {
  constexpr __mmask16 kAll16 = 0xffff;
  constexpr __mmask8 kAll8 = 0xff;
  __m512i t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_epi32(kAll16, v[i], v[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_epi32(kAll16, v[i], v[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // v[i + m], lane k: column 4k + m of rows i..i+3
    v[i] = _mm512_maskz_unpacklo_epi64(kAll8, t[i], t[i + 2]);
    v[i + 1] = _mm512_maskz_unpackhi_epi64(kAll8, t[i], t[i + 2]);
    v[i + 2] = _mm512_maskz_unpacklo_epi64(kAll8, t[i + 1], t[i + 3]);
    v[i + 3] = _mm512_maskz_unpackhi_epi64(kAll8, t[i + 1], t[i + 3]);
  }
  for (int m = 0; m < 4; ++m) {
    const __m512i ab01 = _mm512_maskz_shuffle_i32x4(kAll16, v[m], v[4 + m], 0x44),
                  ab23 = _mm512_maskz_shuffle_i32x4(kAll16, v[m], v[4 + m], 0xee);
    const __m512i cd01 = _mm512_maskz_shuffle_i32x4(kAll16, v[8 + m], v[12 + m], 0x44);
    const __m512i cd23 = _mm512_maskz_shuffle_i32x4(kAll16, v[8 + m], v[12 + m], 0xee);
    t[m] = _mm512_maskz_shuffle_i32x4(kAll16, ab01, cd01, 0x88);
    t[4 + m] = _mm512_maskz_shuffle_i32x4(kAll16, ab01, cd01, 0xdd);
    t[8 + m] = _mm512_maskz_shuffle_i32x4(kAll16, ab23, cd23, 0x88);
    t[12 + m] = _mm512_maskz_shuffle_i32x4(kAll16, ab23, cd23, 0xdd);
  }
  for (int i = 0; i < 16; ++i) v[i] = t[i];
}

// Lines whose k values lie side by side (rows of A, columns of a transposed B) into the kernel's layout: pair q
// of line l goes to 32-bit word q * width + l; lines past `lines` and the odd K's missing half are zeros.
__attribute__((target("avx512f,avx512bw"))) void packLinesOfPairs(const bf16* src, int64_t ld, int64_t lines,
                                                                  int64_t kc, int64_t width, bf16* out) {
  auto* words = reinterpret_cast<uint32_t*>(out);
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t l0 = 0; l0 < width; l0 += 16) {
    const auto lanes = static_cast<__mmask16>((1u << std::min<int64_t>(16, width - l0)) - 1);
    for (int64_t q0 = 0; q0 < pairs; q0 += 16) {
      __m512i v[16];
      for (int64_t i = 0; i < 16; ++i) {
        v[i] = l0 + i < lines ? loadBf16(src + (l0 + i) * ld + 2 * q0, kc - 2 * q0) : _mm512_setzero_si512();
      }
      transpose16x16(v);
      for (int64_t t = 0; t < std::min<int64_t>(16, pairs - q0); ++t) {
        _mm512_mask_storeu_epi32(words + (q0 + t) * width + l0, lanes, v[t]);
      }
    }
  }
}

// Lines holding one k each (rows of B, k-rows of a transposed A): lines p and p+1 interleave, `count` values
// from `first` on, zero-padded to `width` pairs.
__attribute__((target("avx512f,avx512bw"))) void packInterleavedLines(const bf16* first, int64_t ld, int64_t kc,
                                                                      int64_t count, int64_t width, bf16* out) {
  const auto low_lanes = static_cast<__mmask32>((uint64_t{1} << std::min<int64_t>(2 * width, 32)) - 1);
  const auto high_lanes = static_cast<__mmask32>((uint64_t{1} << std::clamp<int64_t>(2 * width - 32, 0, 32)) - 1);
  for (int64_t p = 0; p < kc; p += 2) {
    const __m512i even = loadBf16(first + p * ld, count);
    const __m512i odd = p + 1 < kc ? loadBf16(first + (p + 1) * ld, count) : _mm512_setzero_si512();
    __m512i low, high;
    interleavePairs(even, odd, low, high);
    bf16* dst = out + p * width;
    _mm512_mask_storeu_epi16(dst, low_lanes, low);
    if (high_lanes != 0) _mm512_mask_storeu_epi16(dst + 32, high_lanes, high);
  }
}

struct Bf16Kernel {
  using Call = GemmBf16Call;
  using Packed = bf16;
  static constexpr int64_t kMr = 12, kNr = 32;
  static constexpr int64_t kKc = 512, kMc = 96, kNc = 2048, kColumnsPerTask = 256;

  // Elements of a sliver `width` wide over kc (rounded up to whole pairs).
  static int64_t packedSize(int64_t kc, int64_t width) { return (kc + 1) / 2 * 2 * width; }

  static void packB(const Call& c, int64_t pc, int64_t kc, int64_t col0, int64_t cols, bf16* out) {
    if (c.trans_b == Trans::kNo) {
      packInterleavedLines(c.b + pc * c.ldb + col0, c.ldb, kc, cols, kNr, out);
    } else {
      packLinesOfPairs(c.b + col0 * c.ldb + pc, c.ldb, cols, kc, kNr, out);
    }
  }

  static void packA(const Call& c, int64_t ic, int64_t mc, int64_t pc, int64_t kc, bf16* out) {
    for (int64_t s = 0; s * kMr < mc; ++s) {
      bf16* sliver = out + s * packedSize(kc, kMr);
      const int64_t rows = std::min(kMr, mc - s * kMr), i0 = ic + s * kMr;
      if (c.trans_a == Trans::kNo) {
        packLinesOfPairs(c.a + i0 * c.lda + pc, c.lda, rows, kc, kMr, sliver);
      } else {
        packInterleavedLines(c.a + pc * c.lda + i0, c.lda, kc, rows, kMr, sliver);
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
