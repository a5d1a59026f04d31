// The blocked GEMM driver shared by our float (AVX-512) and bf16 (AVX512-BF16) kernels: pack a KC x NC panel
// of op(B) shared by all threads, pack MC x KC blocks of op(A) per thread, and sweep MR x NR register tiles with
// the kernel's micro-kernel; edge tiles go through a scratch tile. `K` supplies the element types, the block
// sizes, the two packing functions and the micro-kernel (see gemm_avx512.cc and gemm_avx512_bf16.cc).
#pragma once

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace megascale::trainer {

/// The end of both AVX-512 micro-kernels: rows x 32 fp32 accumulators (two zmm a row) into C, added to what C
/// holds when accumulating.
template <int kRows>
__attribute__((target("avx512f"))) inline void storeTile(__m512 (&acc)[kRows][2], float* c, int64_t ldc,
                                                          bool accumulate) {
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
    float* row = c + r * ldc;
    if (accumulate) {
      acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(row));
      acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(row + 16));
    }
    _mm512_storeu_ps(row, acc[r][0]);
    _mm512_storeu_ps(row + 16, acc[r][1]);
  }
}

template <typename T>
struct AlignedBuffer {
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  static std::unique_ptr<T[], Free> make(int64_t count) {
    const size_t bytes = (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
    return std::unique_ptr<T[], Free>(static_cast<T*>(std::aligned_alloc(64, bytes)));
  }
};

/// C = op(A) op(B) + beta C for beta 0 or 1 and k > 0 (the caller scales C for other betas).
template <typename K>
void blockedGemm(const typename K::Call& c) {
  using Packed = typename K::Packed;
  const bool keep_c = c.beta != 0.0f;
  const int64_t nc_max = std::min(K::kNc, (c.n + K::kNr - 1) / K::kNr * K::kNr);
  auto packed_b = AlignedBuffer<Packed>::make(K::packedSize(K::kKc, nc_max));
  auto packed_a = AlignedBuffer<Packed>::make(K::packedSize(K::kKc, K::kMc) * omp_get_max_threads());
#pragma omp parallel
  {
    Packed* my_a = packed_a.get() + omp_get_thread_num() * K::packedSize(K::kKc, K::kMc);
    for (int64_t jc = 0; jc < c.n; jc += K::kNc) {
      const int64_t nc = std::min(K::kNc, c.n - jc);
      const int64_t slivers = (nc + K::kNr - 1) / K::kNr;
      for (int64_t pc = 0; pc < c.k; pc += K::kKc) {
        const int64_t kc = std::min(K::kKc, c.k - pc);
        const bool accumulate = keep_c || pc > 0;
#pragma omp for schedule(static)
        for (int64_t s = 0; s < slivers; ++s) {
          K::packB(c, pc, kc, jc + s * K::kNr, std::min(K::kNr, nc - s * K::kNr),
                   packed_b.get() + s * K::packedSize(kc, K::kNr));
        }
        const int64_t row_blocks = (c.m + K::kMc - 1) / K::kMc;
        const int64_t column_tasks = (nc + K::kColumnsPerTask - 1) / K::kColumnsPerTask;
        int64_t last_packed = -1;
#pragma omp for schedule(dynamic, 1)
        for (int64_t task = 0; task < row_blocks * column_tasks; ++task) {
          const int64_t ib = task / column_tasks, jt = task % column_tasks;
          const int64_t ic = ib * K::kMc, mc = std::min(K::kMc, c.m - ic);
          if (ib != last_packed) {
            K::packA(c, ic, mc, pc, kc, my_a);
            last_packed = ib;
          }
          const int64_t j_end = std::min(nc, (jt + 1) * K::kColumnsPerTask);
          for (int64_t jr = jt * K::kColumnsPerTask; jr < j_end; jr += K::kNr) {
            const Packed* b_sliver = packed_b.get() + (jr / K::kNr) * K::packedSize(kc, K::kNr);
            const int64_t cols = std::min(K::kNr, nc - jr);
            for (int64_t ir = 0; ir < mc; ir += K::kMr) {
              const Packed* a_sliver = my_a + (ir / K::kMr) * K::packedSize(kc, K::kMr);
              float* c_tile = c.c + (ic + ir) * c.ldc + jc + jr;
              const int64_t rows = std::min(K::kMr, mc - ir);
              if (rows == K::kMr && cols == K::kNr) {
                K::micro(kc, a_sliver, b_sliver, c_tile, c.ldc, accumulate);
                continue;
              }
              alignas(64) float tile[K::kMr * K::kNr];
              K::micro(kc, a_sliver, b_sliver, tile, K::kNr, false);
              for (int64_t r = 0; r < rows; ++r) {
                for (int64_t j = 0; j < cols; ++j) {
                  float& out = c_tile[r * c.ldc + j];
                  out = (accumulate ? out : 0.0f) + tile[r * K::kNr + j];
                }
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace megascale::trainer
