// bf16 GEMM on AMX tiles. A TDPBF16PS multiplies a 16x32 bf16 tile of A by a 32x16 tile of B (stored as 16 rows
// of 16 column pairs, the "VNNI" layout) into a 16x16 fp32 tile. The micro-kernel holds a 32x32 block of C in
// four tiles (0-3), two A tiles (4-5) and two B tiles (6-7): four TDPBF16PS per 32-deep step of K. Packing as in
// the float kernel: a KC x NC panel of B shared by the threads, 32-row blocks of A per thread.
#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "trainer/kernels/gemm_bf16_backends.h"
#include "trainer/kernels/gemm_blocked.h"

namespace megascale::trainer {

namespace {

constexpr int64_t kBlock = 32;   // C block: 32 x 32
constexpr int64_t kStep = 32;    // K per TDPBF16PS
constexpr int64_t kKc = 512;     // K per packed panel
constexpr int64_t kNc = 1024;    // columns per packed B panel (1 MiB at kKc)
constexpr int64_t kStepElements = kBlock * kStep;  // one packed 32 x 32 bf16 chunk

struct TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// op(A)[ic.., pc..] -> [steps][32 rows][32 k], zero-padded. Rows are copied whole when A is not transposed;
// a transposed A is read a k-row at a time (contiguous across i) and written down a column.
void packA(const GemmBf16Call& c, int64_t ic, int64_t pc, int64_t kc, bf16* out) {
  const int64_t steps = (kc + kStep - 1) / kStep, rows = std::min(kBlock, c.m - ic);
  std::memset(out, 0, static_cast<size_t>(steps * kStepElements) * sizeof(bf16));
  for (int64_t s = 0; s < steps; ++s) {
    bf16* chunk = out + s * kStepElements;
    const int64_t depth = std::min(kStep, kc - s * kStep);
    if (c.trans_a == Trans::kNo) {
      for (int64_t r = 0; r < rows; ++r) {
        std::memcpy(chunk + r * kStep, c.a + (ic + r) * c.lda + pc + s * kStep, static_cast<size_t>(depth) * sizeof(bf16));
      }
    } else {
      for (int64_t q = 0; q < depth; ++q) {
        const bf16* src = c.a + (pc + s * kStep + q) * c.lda + ic;
        for (int64_t r = 0; r < rows; ++r) chunk[r * kStep + q] = src[r];
      }
    }
  }
}

// op(B)[pc.., column block] -> [steps][16 pairs][32 columns][2], zero-padded: rows p and p+1 interleave.
void packB(const GemmBf16Call& c, int64_t pc, int64_t kc, int64_t col0, bf16* out) {
  const int64_t steps = (kc + kStep - 1) / kStep, cols = std::min(kBlock, c.n - col0);
  std::memset(out, 0, static_cast<size_t>(steps * kStepElements) * sizeof(bf16));
  for (int64_t s = 0; s < steps; ++s) {
    bf16* chunk = out + s * kStepElements;
    const int64_t depth = std::min(kStep, kc - s * kStep);
    if (c.trans_b == Trans::kNo) {
      for (int64_t q = 0; q < depth; ++q) {
        const bf16* row = c.b + (pc + s * kStep + q) * c.ldb + col0;
        bf16* dst = chunk + (q / 2) * 2 * kBlock + (q % 2);
        for (int64_t j = 0; j < cols; ++j) dst[2 * j] = row[j];
      }
    } else {
      for (int64_t j = 0; j < cols; ++j) {
        const bf16* column = c.b + (col0 + j) * c.ldb + pc + s * kStep;
        for (int64_t q = 0; q < depth; ++q) chunk[(q / 2) * 2 * kBlock + 2 * j + (q % 2)] = column[q];
      }
    }
  }
}

__attribute__((target("amx-tile"))) void releaseTiles() { _tile_release(); }

__attribute__((target("amx-tile,amx-bf16"))) void loadTileConfig() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytes_per_row[t] = 64;
  }
  // GCC 12 does not see ldtilecfg read the struct and drops the stores above; the empty asm keeps them.
  __asm__ volatile("" : : "r"(&config) : "memory");
  _tile_loadconfig(&config);
}

// C block (32 x 32, row stride ldc floats) += packed A block x packed B block over `steps` K steps.
__attribute__((target("amx-tile,amx-bf16"))) void microKernel(const bf16* a, const bf16* b, int64_t steps, float* c,
                                                              int64_t ldc, bool accumulate) {
  const int64_t stride = ldc * static_cast<int64_t>(sizeof(float));
  if (accumulate) {
    _tile_loadd(0, c, stride);
    _tile_loadd(1, c + 16, stride);
    _tile_loadd(2, c + 16 * ldc, stride);
    _tile_loadd(3, c + 16 * ldc + 16, stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t s = 0; s < steps; ++s) {
    const bf16* as = a + s * kStepElements;
    const bf16* bs = b + s * kStepElements;
    _tile_loadd(4, as, 64);
    _tile_loadd(5, as + 16 * kStep, 64);
    _tile_loadd(6, bs, 128);
    _tile_loadd(7, bs + 32, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, stride);
  _tile_stored(1, c + 16, stride);
  _tile_stored(2, c + 16 * ldc, stride);
  _tile_stored(3, c + 16 * ldc + 16, stride);
}

void block(const GemmBf16Call& call, const bf16* a, const bf16* b, int64_t steps, int64_t i0, int64_t j0,
           bool accumulate) {
  const int64_t rows = std::min(kBlock, call.m - i0), cols = std::min(kBlock, call.n - j0);
  float* c = call.c + i0 * call.ldc + j0;
  if (rows == kBlock && cols == kBlock) {
    microKernel(a, b, steps, c, call.ldc, accumulate);
    return;
  }
  alignas(64) float scratch[kBlock * kBlock] = {};
  if (accumulate) {
    for (int64_t r = 0; r < rows; ++r) std::memcpy(scratch + r * kBlock, c + r * call.ldc, cols * sizeof(float));
  }
  microKernel(a, b, steps, scratch, kBlock, true);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(c + r * call.ldc, scratch + r * kBlock, cols * sizeof(float));
}

}  // namespace

bool amxUsable() {
  static const bool usable = [] {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    const bool tile = (edx >> 24) & 1, bf16_ops = (edx >> 22) & 1;
    // Linux hands out the 8 KiB tile state only on request (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
    return tile && bf16_ops && syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  }();
  return usable;
}

bool avx512Bf16Present() {
  unsigned eax, ebx, ecx, edx;
  return __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && ((eax >> 5) & 1);
}

void gemmAmx(const GemmBf16Call& c) {
  const int64_t row_blocks = (c.m + kBlock - 1) / kBlock;
  const int64_t panel_steps_max = (std::min(kKc, c.k) + kStep - 1) / kStep;
  const int64_t column_blocks_max = (std::min(kNc, c.n) + kBlock - 1) / kBlock;
  auto packed_b = AlignedBuffer<bf16>::make(column_blocks_max * panel_steps_max * kStepElements);
  auto packed_a = AlignedBuffer<bf16>::make(static_cast<int64_t>(omp_get_max_threads()) * panel_steps_max * kStepElements);
  const bool keep_c = c.beta != 0.0f;
#pragma omp parallel
  {
    loadTileConfig();  // tile configuration is per thread
    bf16* my_a = packed_a.get() + omp_get_thread_num() * panel_steps_max * kStepElements;
    for (int64_t jc = 0; jc < c.n; jc += kNc) {
      const int64_t nc = std::min(kNc, c.n - jc);
      const int64_t column_blocks = (nc + kBlock - 1) / kBlock;
      for (int64_t pc = 0; pc < c.k; pc += kKc) {
        const int64_t kc = std::min(kKc, c.k - pc);
        const int64_t steps = (kc + kStep - 1) / kStep;
#pragma omp for schedule(static)
        for (int64_t jb = 0; jb < column_blocks; ++jb) {
          packB(c, pc, kc, jc + jb * kBlock, packed_b.get() + jb * steps * kStepElements);
        }
        int64_t packed_row = -1;
#pragma omp for schedule(dynamic, 1)
        for (int64_t ib = 0; ib < row_blocks; ++ib) {
          if (ib != packed_row) {
            packA(c, ib * kBlock, pc, kc, my_a);
            packed_row = ib;
          }
          for (int64_t jb = 0; jb < column_blocks; ++jb) {
            block(c, my_a, packed_b.get() + jb * steps * kStepElements, steps, ib * kBlock, jc + jb * kBlock,
                  keep_c || pc > 0);
          }
        }
      }
    }
    releaseTiles();
  }
}

}  // namespace megascale::trainer
