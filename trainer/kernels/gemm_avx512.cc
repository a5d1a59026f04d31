// Our float GEMM: the classic blocked scheme (pack a KC x NC panel of B shared by all threads, pack MC x KC
// blocks of A per thread, a 12 x 32 register-tile micro-kernel). 24 accumulators + 2 B vectors + 1 broadcast
// fit in 32 zmm registers; 24 independent FMAs per k step cover the FMA latency on two ports.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "trainer/kernels/gemm_backends.h"
#include "trainer/kernels/gemm_blocked.h"

namespace megascale::trainer {

namespace {

constexpr int64_t kMr = 12, kNr = 32;

// Lane indices of one transpose round that swaps the off-diagonal kWidth-wide blocks between rows i and
// i + kWidth: row i keeps its columns without bit kWidth and takes row i+kWidth's (low); row i+kWidth keeps its
// columns with bit kWidth and takes row i's (high). Index 16 + j is lane j of the second operand.
struct SwapIndex {
  alignas(64) int32_t low[16];
  alignas(64) int32_t high[16];
};
constexpr SwapIndex swapIndex(int width) {
  SwapIndex index{};
  for (int j = 0; j < 16; ++j) {
    index.low[j] = (j & width) != 0 ? 16 + j - width : j;
    index.high[j] = (j & width) != 0 ? 16 + j : j + width;
  }
  return index;
}

template <int kWidth>
__attribute__((target("avx512f"), always_inline)) inline void swapRound(__m512 (&r)[16]) {
  static constexpr SwapIndex kIndex = swapIndex(kWidth);
  const __m512i low = _mm512_load_si512(kIndex.low), high = _mm512_load_si512(kIndex.high);
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    if ((i & kWidth) != 0) continue;
    const __m512 a = r[i], b = r[i + kWidth];
    r[i] = _mm512_permutex2var_ps(a, low, b);
    r[i + kWidth] = _mm512_permutex2var_ps(a, high, b);
  }
}

// dst[q * dst_ld + r] = src[r * ld + q] for r < rows, q < cols (both at most 16); lanes rows..width-1 of each
// written dst row are zero. A 16 x 16 transpose in registers (four rounds of block swaps) instead of one
// strided scalar store per element.
__attribute__((target("avx512f"))) void transposeBlock(const float* src, int64_t ld, int rows, int cols, float* dst,
                                                        int64_t dst_ld, int width) {
  const __mmask16 in_cols = static_cast<__mmask16>((1u << cols) - 1);
  __m512 r[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_maskz_loadu_ps(in_cols, src + i * ld) : _mm512_setzero_ps();
  swapRound<8>(r);
  swapRound<4>(r);
  swapRound<2>(r);
  swapRound<1>(r);
  const __mmask16 out_lanes = static_cast<__mmask16>((1u << width) - 1);
#pragma GCC unroll 16
  for (int q = 0; q < 16; ++q) {
    if (q < cols) _mm512_mask_storeu_ps(dst + q * dst_ld, out_lanes, r[q]);
  }
}

// op(B)[pc.., jc..] as slivers of kNr columns: sliver s holds kc rows of kNr floats (zero-padded).
void packSliverB(const GemmCall<float>& c, int64_t pc, int64_t kc, int64_t col0, int64_t cols, float* out) {
  if (c.trans_b == Trans::kNo) {
    for (int64_t p = 0; p < kc; ++p) {
      const float* row = c.b + (pc + p) * c.ldb + col0;
      float* dst = out + p * kNr;
      if (cols == kNr) {
        std::memcpy(dst, row, kNr * sizeof(float));  // a fixed size: inlined, not a libc call per row
        continue;
      }
      std::memcpy(dst, row, static_cast<size_t>(cols) * sizeof(float));
      std::fill(dst + cols, dst + kNr, 0.0f);
    }
    return;
  }
  // op(B) = B^T: the sliver's columns are rows of B.
  for (int64_t j = 0; j < kNr; j += 16) {
    const int rows = static_cast<int>(std::clamp<int64_t>(cols - j, 0, 16));
    for (int64_t p = 0; p < kc; p += 16) {
      transposeBlock(c.b + (col0 + j) * c.ldb + pc + p, c.ldb, rows, static_cast<int>(std::min<int64_t>(16, kc - p)),
                     out + p * kNr + j, kNr, 16);
    }
  }
}

// op(A)[ic.., pc..] as slivers of kMr rows: sliver s holds kc columns of kMr floats (zero-padded).
void packBlockA(const GemmCall<float>& c, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float* out) {
  const int64_t slivers = (mc + kMr - 1) / kMr;
  if (c.trans_a == Trans::kYes) {
    // op(A) = A^T: a k step of a sliver is kMr consecutive floats of one row of A.
    for (int64_t p = 0; p < kc; ++p) {
      const float* row = c.a + (pc + p) * c.lda + ic;
      for (int64_t s = 0; s < slivers; ++s) {
        float* dst = out + s * kMr * kc + p * kMr;
        const int64_t rows = std::min(kMr, mc - s * kMr);
        if (rows == kMr) {
          std::memcpy(dst, row + s * kMr, kMr * sizeof(float));
        } else {
          std::memcpy(dst, row + s * kMr, static_cast<size_t>(rows) * sizeof(float));
          std::fill(dst + rows, dst + kMr, 0.0f);
        }
      }
    }
    return;
  }
  for (int64_t s = 0; s < slivers; ++s) {
    const int rows = static_cast<int>(std::min(kMr, mc - s * kMr));
    for (int64_t p = 0; p < kc; p += 16) {
      transposeBlock(c.a + (ic + s * kMr) * c.lda + pc + p, c.lda, rows, static_cast<int>(std::min<int64_t>(16, kc - p)),
                     out + s * kMr * kc + p * kMr, kMr, kMr);
    }
  }
}

__attribute__((target("avx512f"))) void microKernel(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                                                    bool accumulate) {
  __m512 acc[kMr][2];
#pragma GCC unroll 12
  for (int r = 0; r < kMr; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 12
    for (int r = 0; r < kMr; ++r) {
      __m512 ar = _mm512_set1_ps(a[r]);
      acc[r][0] = _mm512_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(ar, b1, acc[r][1]);
    }
    a += kMr;
    b += kNr;
  }
  storeTile<kMr>(acc, c, ldc, accumulate);
}

void scaleC(const GemmCall<float>& c) {
#pragma omp parallel for
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) c.c[i * c.ldc + j] *= c.beta;
  }
}

struct FloatKernel {
  using Call = GemmCall<float>;
  using Packed = float;
  static constexpr int64_t kMr = 12, kNr = 32;
  static constexpr int64_t kKc = 256;              // a 12 x 256 A sliver and a 256 x 32 B sliver stay in L1/L2
  static constexpr int64_t kMc = 96;               // A block 96 x 256 x 4 B = 96 KiB per thread (L2)
  static constexpr int64_t kNc = 2048;             // B panel 256 x 2048 x 4 B = 2 MiB, shared (L2/L3)
  static constexpr int64_t kColumnsPerTask = 256;  // a task = one A block x 8 B slivers
  static int64_t packedSize(int64_t kc, int64_t width) { return kc * width; }
  static void packA(const Call& c, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float* out) {
    packBlockA(c, ic, mc, pc, kc, out);
  }
  static void packB(const Call& c, int64_t pc, int64_t kc, int64_t col0, int64_t cols, float* out) {
    packSliverB(c, pc, kc, col0, cols, out);
  }
  static void micro(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) {
    microKernel(kc, a, b, c, ldc, accumulate);
  }
};

}  // namespace

bool cpuHasAvx512() { return __builtin_cpu_supports("avx512f"); }

void gemmAvx512(const GemmCall<float>& c) {
  if (c.m == 0 || c.n == 0) return;
  if (c.k == 0 || (c.beta != 0.0f && c.beta != 1.0f)) {
    if (c.beta == 0.0f) {
      for (int64_t i = 0; i < c.m; ++i) std::fill(c.c + i * c.ldc, c.c + i * c.ldc + c.n, 0.0f);
    } else {
      scaleC(c);
    }
    if (c.k == 0) return;
    GemmCall<float> accumulate = c;
    accumulate.beta = 1.0f;
    return blockedGemm<FloatKernel>(accumulate);
  }
  blockedGemm<FloatKernel>(c);
}

}  // namespace megascale::trainer
