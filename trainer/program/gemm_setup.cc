#include "trainer/program/gemm_setup.h"

#include <algorithm>
#include <cmath>

#include "trainer/kernels/gemm.h"
#include "trainer/kernels/gemm_bf16.h"

namespace megascale::trainer {

namespace {

void logChoice(std::ostream& log, const char* label, const GemmChoice& choice, int64_t m, int64_t n, int64_t k) {
  log << label << ": " << choice.backend;
  if (choice.measured.empty()) return;
  log << " (measured on " << m << "x" << n << "x" << k << ":";
  for (const auto& [name, rate] : choice.measured) log << " " << name << " " << std::lround(rate);
  log << " GFLOP/s)";
}

}  // namespace

// The float choice is made in bf16 runs too (the widened-float bf16 path runs on it), but only the precision
// in use has its peak measured.
double chooseGemm(const TrainOptions& o, bool bf16, std::ostream& log) {
  const int64_t m = o.batch_size * o.model.seq_len, n = 4 * o.model.d_model, k = o.model.d_model;
  const GemmChoice fp32 = selectGemmBackend(o.gemm, m, n, k, 0.3);
  logChoice(log, "GEMM", fp32, m, n, k);
  double peak = 0;
  if (o.peak_gflops > 0) {  // given: MFU against it, nothing measured beyond the backend choice
    if (bf16) logChoice(log << "\n", "bf16 GEMM", selectFastestBf16GemmBackend(m, n, k, 0.2), m, n, k);
    log << "; peak " << std::lround(o.peak_gflops) << " GFLOP/s (given)\n";
    return o.peak_gflops;
  }
  if (!bf16) {
    const double on_shape = fp32.measured.empty() ? measureGemmGflops(m, n, k, 0.3) : fp32.gflops;
    peak = std::max(measureGemmGflops(2048, 2048, 2048, 0.3), on_shape);
  } else {
    log << "\n";
    const GemmChoice half = selectFastestBf16GemmBackend(m, n, k, 0.2);
    logChoice(log, "bf16 GEMM", half, m, n, k);
    peak = std::max(measureBf16GemmGflops(2048, 2048, 2048, 0.3), half.gflops);
  }
  log << "; peak " << std::lround(peak) << " GFLOP/s\n";
  return peak;
}

}  // namespace megascale::trainer
