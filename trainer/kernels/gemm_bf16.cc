#include "trainer/kernels/gemm_bf16.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "trainer/kernels/gemm_bf16_backends.h"

namespace megascale::trainer {

namespace {

std::string selected;  // empty: the best available

const std::string& chosen() {
  static const std::vector<std::string> available = availableBf16GemmBackends();
  return selected.empty() ? available.front() : selected;
}

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

std::vector<std::string> availableBf16GemmBackends() {
  std::vector<std::string> names;
  if (amxUsable()) names.push_back("amx");
  if (avx512Bf16Present()) names.push_back("avx512-bf16");
  names.push_back("widened-float");
  return names;
}

void selectBf16GemmBackend(const std::string& name) {
  if (name == "auto") {
    selected.clear();
    return;
  }
  const auto names = availableBf16GemmBackends();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw std::invalid_argument("bf16 GEMM backend '" + name + "' is not available on this CPU");
  }
  selected = name;
}

const std::string& bf16GemmBackend() { return chosen(); }

void gemmBf16(const GemmBf16Call& c) {
  if (c.m == 0 || c.n == 0) return;
  const std::string& backend = chosen();
  if (backend == "widened-float") return gemmWidened(c);
  auto run = [&](const GemmBf16Call& call) { backend == "amx" ? gemmAmx(call) : gemmAvx512Bf16(call); };
  if (c.k == 0 || (c.beta != 0.0f && c.beta != 1.0f)) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < c.n; ++j) c.c[i * c.ldc + j] = c.beta == 0.0f ? 0.0f : c.c[i * c.ldc + j] * c.beta;
    }
    if (c.k == 0) return;
    GemmBf16Call accumulate = c;
    accumulate.beta = 1.0f;
    return run(accumulate);
  }
  run(c);
}

GemmChoice selectFastestBf16GemmBackend(int64_t m, int64_t n, int64_t k, double seconds_each) {
  GemmChoice choice;
  for (const std::string& name : availableBf16GemmBackends()) {
    selectBf16GemmBackend(name);
    const double rate = measureBf16GemmGflops(m, n, k, seconds_each);
    choice.measured.emplace_back(name, rate);
    if (rate > choice.gflops) {
      choice.gflops = rate;
      choice.backend = name;
    }
  }
  selectBf16GemmBackend(choice.backend);
  return choice;
}

double measureBf16GemmGflops(int64_t m, int64_t n, int64_t k, double seconds) {
  std::vector<bf16> a(static_cast<size_t>(m * k), toBf16(0.5f)), b(static_cast<size_t>(k * n), toBf16(0.25f));
  std::vector<float> c(static_cast<size_t>(m * n));
  const GemmBf16Call call{Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, 0.0f, c.data(), n};
  return bestGflops([&] { gemmBf16(call); }, m, n, k, seconds);
}

}  // namespace megascale::trainer
