#include "trainer/kernels/gemm_bf16.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "trainer/kernels/gemm_bf16_backends.h"

namespace megascale::trainer {

namespace {

bool amx_allowed = true;

bool useAmx() { return amx_allowed && amxUsable(); }

// Widen op(A) and op(B) to float and run the float GEMM: the portable path.
void gemmWidened(const GemmBf16Call& c) {
  const int64_t a_rows = c.trans_a == Trans::kNo ? c.m : c.k, a_cols = c.trans_a == Trans::kNo ? c.k : c.m;
  const int64_t b_rows = c.trans_b == Trans::kNo ? c.k : c.n, b_cols = c.trans_b == Trans::kNo ? c.n : c.k;
  std::vector<float> a(static_cast<size_t>(a_rows * a_cols)), b(static_cast<size_t>(b_rows * b_cols));
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a_rows; ++r) {
    for (int64_t q = 0; q < a_cols; ++q) a[static_cast<size_t>(r * a_cols + q)] = fromBf16(c.a[r * c.lda + q]);
  }
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < b_rows; ++r) {
    for (int64_t q = 0; q < b_cols; ++q) b[static_cast<size_t>(r * b_cols + q)] = fromBf16(c.b[r * c.ldb + q]);
  }
  gemm(GemmCall<float>{c.trans_a, c.trans_b, c.m, c.n, c.k, a.data(), a_cols, b.data(), b_cols, c.beta, c.c, c.ldc});
}

}  // namespace

bool cpuHasBf16Compute() { return amxUsable() || avx512Bf16Present(); }

void allowAmx(bool allowed) { amx_allowed = allowed; }

const std::string& bf16GemmBackend() {
  static const std::string amx = "amx", widened = "widened-float";
  return useAmx() ? amx : widened;
}

void gemmBf16(const GemmBf16Call& c) {
  if (c.m == 0 || c.n == 0) return;
  if (!useAmx()) return gemmWidened(c);
  if (c.k == 0 || (c.beta != 0.0f && c.beta != 1.0f)) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) c.c[i * c.ldc + j] = c.beta == 0.0f ? 0.0f : c.c[i * c.ldc + j] * c.beta;
    }
    if (c.k == 0) return;
    GemmBf16Call accumulate = c;
    accumulate.beta = 1.0f;
    return gemmAmx(accumulate);
  }
  gemmAmx(c);
}

double measureBf16GemmGflops(int64_t m, int64_t n, int64_t k, double seconds) {
  std::vector<bf16> a(static_cast<size_t>(m * k), toBf16(0.5f)), b(static_cast<size_t>(k * n), toBf16(0.25f));
  std::vector<float> c(static_cast<size_t>(m * n));
  const GemmBf16Call call{Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, 0.0f, c.data(), n};
  gemmBf16(call);
  using Clock = std::chrono::steady_clock;
  double best = 1e30;
  const auto stop = Clock::now() + std::chrono::duration<double>(seconds);
  for (int runs = 0; runs < 3 || Clock::now() < stop; ++runs) {
    const auto t0 = Clock::now();
    gemmBf16(call);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / best / 1e9;
}

}  // namespace megascale::trainer
