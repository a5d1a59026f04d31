// Google Benchmark microbenchmarks of the reduction kernels: every table this CPU runs, for the common
// dtypes, against memcpy of the same bytes in the same run. GB/s counts the bytes a reduction touches
// (two inputs read, one output written), as memcpy's counts one read and one write.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "collectives/dtype.h"
#include "collectives/kernels/kernel_table.h"

namespace {

using namespace megascale;
using namespace megascale::kernels;

void memcpyBench(benchmark::State& state) {
  size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<uint8_t> src(bytes, 1), dst(bytes);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(2 * bytes));
}

void reduceBench(benchmark::State& state, const KernelTable* table, mscDataType_t type, int op) {
  size_t bytes = static_cast<size_t>(state.range(0));
  size_t n = bytes / dtypeSize(type);
  std::vector<uint8_t> a(bytes), b(bytes), d(bytes);
  for (size_t i = 0; i < n; ++i) {
    storeAsType(type, a.data(), i, static_cast<double>(i % 7));
    storeAsType(type, b.data(), i, static_cast<double>(i % 5));
  }
  for (auto _ : state) {
    table->reduce[type][op](d.data(), a.data(), b.data(), n);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(3 * bytes));
  state.SetLabel(table->isa);
}

void registerAll() {
  for (int64_t bytes : {int64_t(256) << 10, int64_t(64) << 20}) {
    benchmark::RegisterBenchmark("memcpy", memcpyBench)->Arg(bytes);
  }
  for (const KernelTable* table : {&scalarTable(), avx2Table(), avx512Table()}) {
    if (table == nullptr || !cpuSupports(*table)) continue;
    for (mscDataType_t type : {mscFloat32, mscBfloat16, mscFloat16, mscFloat64, mscInt32, mscInt8}) {
      std::string name = std::string("reduce_sum/") + table->isa + "/" + dtypeName(type);
      for (int64_t bytes : {int64_t(256) << 10, int64_t(64) << 20}) {
        benchmark::RegisterBenchmark(name.c_str(), reduceBench, table, type, 0)->Arg(bytes);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::printf("reduction kernels in use by collectives: %s (MEGASCALE_KERNELS overrides)\n", activeTable().isa);
  registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
