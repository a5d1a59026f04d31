// Matrix multiply for the trainer: C = op(A) * op(B) + beta * C, row-major, with the backend chosen by
// measurement. Every linear layer, the tied vocabulary head and the GEMM peak behind MFU go through here.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace megascale::trainer {

enum class Trans : char { kNo = 'N', kYes = 'T' };

/// One row-major multiply: C[m,n] = op(A)[m,k] * op(B)[k,n] + beta * C. op(A) is A (lda >= k) or A^T
/// stored as [k,m] (lda >= m); likewise B. beta = 0 overwrites C without reading it. A and B hold T, C holds
/// Out (bf16 operands accumulate into float: GemmCall<bf16, float>).
template <typename T, typename Out = T>
struct GemmCall {
  Trans trans_a = Trans::kNo, trans_b = Trans::kNo;
  int64_t m = 0, n = 0, k = 0;
  const T* a = nullptr;
  int64_t lda = 0;
  const T* b = nullptr;
  int64_t ldb = 0;
  Out beta = 0;
  Out* c = nullptr;
  int64_t ldc = 0;
};

/// Runs a float multiply on the selected backend; double always runs our portable kernel (tests).
void gemm(const GemmCall<float>& call);
void gemm(const GemmCall<double>& call);

/// The plain triple loop: the oracle that every backend is tested against.
template <typename T>
void gemmReference(const GemmCall<T>& call);

/// A float GEMM implementation: ours (AVX-512 or portable) or a library opened at run time.
struct GemmBackend {
  std::string name;                                   // "ours-avx512", "onednn", "openblas", "blis", ...
  void (*run)(const GemmCall<float>&) = nullptr;      // thread-safe; uses the library's own threads
};

/// Every backend usable on this machine, ours first. Libraries are dlopen'ed by soname, so a missing
/// package only removes its entry.
const std::vector<GemmBackend>& availableGemmBackends();

/// Chooses the float backend: `name` ("auto" measures each available one on `probe_shape` and keeps the
/// fastest). Throws std::invalid_argument naming the choices when `name` is unknown or unavailable.
struct GemmChoice {
  std::string backend;
  double gflops = 0;                                  // the measured rate of the chosen backend (0 if not measured)
  std::vector<std::pair<std::string, double>> measured;  // every backend measured, GFLOP/s
};
GemmChoice selectGemmBackend(const std::string& name, int64_t m, int64_t n, int64_t k, double seconds_each);

/// The backend gemm(float) uses now.
const std::string& currentGemmBackend();

/// Best-of-repeats GFLOP/s of the current backend on one shape (the MFU denominator).
double measureGemmGflops(int64_t m, int64_t n, int64_t k, double seconds);

/// The rate of an m x n x k multiply that `run` performs: one warm-up call (thread pools, JIT, page faults),
/// then the best of at least three timed calls and of as many as fit in `seconds`.
double bestGflops(const std::function<void()>& run, int64_t m, int64_t n, int64_t k, double seconds);

}  // namespace megascale::trainer
