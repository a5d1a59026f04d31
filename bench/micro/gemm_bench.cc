// GEMM backends on the shapes of one training step of the bench/trainer_compare model (6 layers, d_model
// 384, batch 8 x seq 256): every backend megascale-train can pick, GFLOP/s per shape. The trainer keeps
// the fastest by measuring at start-up; this shows the whole table.
#include <benchmark/benchmark.h>

#include <vector>

#include "trainer/kernels/gemm.h"
#include "trainer/kernels/gemm_bf16.h"

namespace {

using megascale::trainer::GemmCall;
using megascale::trainer::Trans;

struct Shape {
  const char* name;
  Trans ta, tb;
  int64_t m, n, k;
};

// M = tokens (2048), d = 384: forward, input-gradient (NT) and weight-gradient (TN) GEMMs.
const Shape kShapes[] = {
    {"fwd_qkv_NN", Trans::kNo, Trans::kNo, 2048, 1152, 384},   {"fwd_fc_NN", Trans::kNo, Trans::kNo, 2048, 1536, 384},
    {"fwd_fcproj_NN", Trans::kNo, Trans::kNo, 2048, 384, 1536}, {"head_NT", Trans::kNo, Trans::kYes, 2048, 256, 384},
    {"dx_fc_NT", Trans::kNo, Trans::kYes, 2048, 384, 1536},     {"dx_fcproj_NT", Trans::kNo, Trans::kYes, 2048, 1536, 384},
    {"dw_fc_TN", Trans::kYes, Trans::kNo, 384, 1536, 2048},     {"dw_fcproj_TN", Trans::kYes, Trans::kNo, 1536, 384, 2048},
    {"square_2048", Trans::kNo, Trans::kNo, 2048, 2048, 2048},
};

void runGemm(benchmark::State& state, const std::string& backend, const Shape& s) {
  megascale::trainer::selectGemmBackend(backend, 0, 0, 0, 0);
  const int64_t a_cols = s.ta == Trans::kNo ? s.k : s.m, b_cols = s.tb == Trans::kNo ? s.n : s.k;
  std::vector<float> a(static_cast<size_t>(s.m * s.k), 0.5f), b(static_cast<size_t>(s.k * s.n), 0.25f),
      c(static_cast<size_t>(s.m * s.n));
  GemmCall<float> call{s.ta, s.tb, s.m, s.n, s.k, a.data(), a_cols, b.data(), b_cols, 1.0f, c.data(), s.n};
  for (auto _ : state) {
    megascale::trainer::gemm(call);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * static_cast<double>(s.m * s.n * s.k), benchmark::Counter::kIsIterationInvariantRate);
}

// --precision bf16: bf16 operands, fp32 accumulation (AMX where present).
void runGemmBf16(benchmark::State& state, const std::string& backend, const Shape& s) {
  using megascale::trainer::bf16;
  megascale::trainer::selectBf16GemmBackend(backend);
  const int64_t a_cols = s.ta == Trans::kNo ? s.k : s.m, b_cols = s.tb == Trans::kNo ? s.n : s.k;
  std::vector<bf16> a(static_cast<size_t>(s.m * s.k), 0x3f00), b(static_cast<size_t>(s.k * s.n), 0x3e80);
  std::vector<float> c(static_cast<size_t>(s.m * s.n));
  const megascale::trainer::GemmBf16Call call{s.ta, s.tb, s.m, s.n, s.k, a.data(), a_cols, b.data(), b_cols,
                                              1.0f, c.data(), s.n};
  for (auto _ : state) {
    megascale::trainer::gemmBf16(call);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2e-9 * static_cast<double>(s.m * s.n * s.k), benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

int main(int argc, char** argv) {
  for (const auto& backend : megascale::trainer::availableGemmBackends()) {
    for (const Shape& shape : kShapes) {
      benchmark::RegisterBenchmark((backend.name + "/" + shape.name).c_str(), runGemm, backend.name, shape)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.2)
          ->UseRealTime();
    }
  }
  for (const std::string& backend : megascale::trainer::availableBf16GemmBackends()) {
    for (const Shape& shape : kShapes) {
      benchmark::RegisterBenchmark(("bf16-" + backend + "/" + shape.name).c_str(), runGemmBf16, backend, shape)
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.2)
          ->UseRealTime();
    }
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
