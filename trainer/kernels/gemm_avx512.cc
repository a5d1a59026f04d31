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

float elementA(const GemmCall<float>& c, int64_t i, int64_t p) {
  return c.trans_a == Trans::kNo ? c.a[i * c.lda + p] : c.a[p * c.lda + i];
}

// op(B)[pc.., jc..] as slivers of kNr columns: sliver s holds kc rows of kNr floats (zero-padded).
void packSliverB(const GemmCall<float>& c, int64_t pc, int64_t kc, int64_t col0, int64_t cols, float* out) {
  if (c.trans_b == Trans::kNo) {
    for (int64_t p = 0; p < kc; ++p) {
      const float* row = c.b + (pc + p) * c.ldb + col0;
      float* dst = out + p * kNr;
      std::memcpy(dst, row, static_cast<size_t>(cols) * sizeof(float));
      std::fill(dst + cols, dst + kNr, 0.0f);
    }
    return;
  }
  for (int64_t j = 0; j < kNr; ++j) {
    if (j >= cols) {
      for (int64_t p = 0; p < kc; ++p) out[p * kNr + j] = 0.0f;
      continue;
    }
    const float* column = c.b + (col0 + j) * c.ldb + pc;
    for (int64_t p = 0; p < kc; ++p) out[p * kNr + j] = column[p];
  }
}

// op(A)[ic.., pc..] as slivers of kMr rows: sliver s holds kc columns of kMr floats (zero-padded).
void packBlockA(const GemmCall<float>& c, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float* out) {
  for (int64_t s = 0; s * kMr < mc; ++s) {
    float* sliver = out + s * kMr * kc;
    int64_t rows = std::min(kMr, mc - s * kMr);
    for (int64_t r = 0; r < kMr; ++r) {
      if (r >= rows) {
        for (int64_t p = 0; p < kc; ++p) sliver[p * kMr + r] = 0.0f;
        continue;
      }
      int64_t i = ic + s * kMr + r;
      if (c.trans_a == Trans::kNo) {
        const float* row = c.a + i * c.lda + pc;
        for (int64_t p = 0; p < kc; ++p) sliver[p * kMr + r] = row[p];
      } else {
        for (int64_t p = 0; p < kc; ++p) sliver[p * kMr + r] = elementA(c, i, pc + p);
      }
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
