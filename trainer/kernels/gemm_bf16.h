// bf16 x bf16 -> fp32 matrix multiply for --precision bf16: C = op(A) op(B) + beta C with A and B in bfloat16
// and C in float (fp32 accumulation). Runs on AMX tiles where the CPU and kernel allow them, else on AVX512-BF16
// dot products, else A and B are widened to float and the float GEMM runs (same results up to accumulation
// order, slower).
#pragma once

#include <string>
#include <vector>

#include "trainer/kernels/bf16.h"
#include "trainer/kernels/gemm.h"

namespace megascale::trainer {

using GemmBf16Call = GemmCall<bf16, float>;

void gemmBf16(const GemmBf16Call& call);

/// "amx", "avx512-bf16" or "widened-float": which one gemmBf16 runs.
const std::string& bf16GemmBackend();

/// The backends this CPU can run, best first.
std::vector<std::string> availableBf16GemmBackends();

/// Whether this CPU has bf16 compute (AMX-BF16 or AVX512-BF16) for --precision bf16.
bool cpuHasBf16Compute();

/// Pins the backend ("auto" = the best available); throws std::invalid_argument for one this CPU lacks.
void selectBf16GemmBackend(const std::string& name);

/// Measures every available backend on one shape, selects the fastest, and returns the figures (like
/// selectGemmBackend("auto") for float).
GemmChoice selectFastestBf16GemmBackend(int64_t m, int64_t n, int64_t k, double seconds_each);

/// Best-of GFLOP/s of gemmBf16 on one shape (the bf16 MFU denominator).
double measureBf16GemmGflops(int64_t m, int64_t n, int64_t k, double seconds);

}  // namespace megascale::trainer
