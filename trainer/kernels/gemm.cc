// Backend list, selection by measurement, and the portable kernels.
#include "trainer/kernels/gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "trainer/kernels/gemm_backends.h"

namespace megascale::trainer {

namespace {

template <typename T>
T elementOf(const T* base, int64_t ld, Trans t, int64_t row, int64_t col) {
  return t == Trans::kNo ? base[row * ld + col] : base[col * ld + row];
}

const GemmBackend* current = nullptr;

const GemmBackend& defaultBackend() {
  const auto& all = availableGemmBackends();
  return all.front();
}

}  // namespace

template <typename T>
void gemmReference(const GemmCall<T>& c) {
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        sum += elementOf(c.a, c.lda, c.trans_a, i, p) * elementOf(c.b, c.ldb, c.trans_b, p, j);
      }
      T& out = c.c[i * c.ldc + j];
      out = c.beta == T(0) ? sum : c.beta * out + sum;
    }
  }
}

// Rows in parallel; op(B) rows streamed contiguously when B is not transposed (the common case).
template <typename T>
void gemmPortable(const GemmCall<T>& c) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < c.m; ++i) {
    T* out = c.c + i * c.ldc;
    if (c.beta == T(0)) {
      std::fill(out, out + c.n, T(0));
    } else if (c.beta != T(1)) {
      for (int64_t j = 0; j < c.n; ++j) out[j] *= c.beta;
    }
    for (int64_t p = 0; p < c.k; ++p) {
      const T a_ip = elementOf(c.a, c.lda, c.trans_a, i, p);
      if (c.trans_b == Trans::kNo) {
        const T* b_row = c.b + p * c.ldb;
        for (int64_t j = 0; j < c.n; ++j) out[j] += a_ip * b_row[j];
      } else {
        for (int64_t j = 0; j < c.n; ++j) out[j] += a_ip * c.b[j * c.ldb + p];
      }
    }
  }
}

template void gemmReference<float>(const GemmCall<float>&);
template void gemmReference<double>(const GemmCall<double>&);
template void gemmPortable<float>(const GemmCall<float>&);
template void gemmPortable<double>(const GemmCall<double>&);

const std::vector<GemmBackend>& availableGemmBackends() {
  static const std::vector<GemmBackend> backends = [] {
    std::vector<GemmBackend> out;
    if (cpuHasAvx512()) out.push_back({"ours-avx512", gemmAvx512});
    out.push_back({"ours-portable", gemmPortable<float>});
    appendLibraryBackends(out);
    return out;
  }();
  return backends;
}

namespace {

// A test-only fault (the fault campaign's "rank whose GEMM returns wrong numbers", which the self-check must
// name): the rank MEGASCALE_TEST_CORRUPT_GEMM names adds 1 to the first element of every product.
bool corruptsGemm() {
  static const bool corrupt = [] {
    const char* target = std::getenv("MEGASCALE_TEST_CORRUPT_GEMM");
    const char* rank = std::getenv("MEGASCALE_RANK");
    return target != nullptr && *target != '\0' && rank != nullptr && std::strcmp(target, rank) == 0;
  }();
  return corrupt;
}

}  // namespace

void gemm(const GemmCall<float>& call) {
  if (current == nullptr) current = &defaultBackend();
  current->run(call);
  if (corruptsGemm() && call.m > 0 && call.n > 0) call.c[0] += 1.0f;
}

void gemm(const GemmCall<double>& call) { gemmPortable(call); }

const std::string& currentGemmBackend() {
  if (current == nullptr) current = &defaultBackend();
  return current->name;
}

namespace {

double timeBackend(const GemmBackend& backend, int64_t m, int64_t n, int64_t k, double seconds) {
  std::vector<float> a(static_cast<size_t>(m * k), 0.5f), b(static_cast<size_t>(k * n), 0.25f),
      c(static_cast<size_t>(m * n));
  const GemmCall<float> call{Trans::kNo, Trans::kNo, m, n, k, a.data(), k, b.data(), n, 0.0f, c.data(), n};
  return bestGflops([&] { backend.run(call); }, m, n, k, seconds);
}

}  // namespace

double bestGflops(const std::function<void()>& run, int64_t m, int64_t n, int64_t k, double seconds) {
  run();
  using Clock = std::chrono::steady_clock;
  double best = 1e30;
  const auto stop = Clock::now() + std::chrono::duration<double>(seconds);
  for (int runs = 0; runs < 3 || Clock::now() < stop; ++runs) {
    const auto t0 = Clock::now();
    run();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) / best / 1e9;
}

GemmChoice selectGemmBackend(const std::string& name, int64_t m, int64_t n, int64_t k, double seconds_each) {
  const auto& all = availableGemmBackends();
  GemmChoice choice;
  if (name != "auto") {
    auto it = std::find_if(all.begin(), all.end(), [&](const GemmBackend& b) { return b.name == name; });
    if (it == all.end()) {
      std::string names;
      for (const auto& b : all) names += (names.empty() ? "" : ", ") + b.name;
      throw std::invalid_argument("GEMM backend '" + name + "' is not available here (available: auto, " + names +
                                  ")");
    }
    current = &*it;
    choice.backend = it->name;
    return choice;
  }
  const GemmBackend* best = nullptr;
  for (const auto& backend : all) {
    if (backend.name == "ours-portable" && all.size() > 1) continue;  // never the fastest where a SIMD one exists
    double rate = timeBackend(backend, m, n, k, seconds_each);
    choice.measured.emplace_back(backend.name, rate);
    if (best == nullptr || rate > choice.gflops) {
      best = &backend;
      choice.gflops = rate;
    }
  }
  current = best;
  choice.backend = best->name;
  return choice;
}

double measureGemmGflops(int64_t m, int64_t n, int64_t k, double seconds) {
  if (current == nullptr) current = &defaultBackend();
  return timeBackend(*current, m, n, k, seconds);
}

}  // namespace megascale::trainer
