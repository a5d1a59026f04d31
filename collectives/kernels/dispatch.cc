#include <cstring>
#include <string>

#include "collectives/kernels/kernel_table.h"
#include "common/config.h"
#include "common/log.h"
#include "common/status.h"

namespace megascale::kernels {

bool cpuSupports(const char* isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (std::strcmp(isa, "avx512") == 0) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  }
  if (std::strcmp(isa, "avx2") == 0) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  }
#endif
  return std::strcmp(isa, "scalar") == 0;
}

// Checked here, in code built for any x86-64: an AMD EPYC without AVX-512 died of SIGILL inside the avx512
// file's table construction before the old check could run.
const KernelTable* avx2Table() { return cpuSupports("avx2") ? avx2TableUnchecked() : nullptr; }
const KernelTable* avx512Table() { return cpuSupports("avx512") ? avx512TableUnchecked() : nullptr; }

namespace {

const KernelTable& choose() {
  std::string wanted = config::getString("MEGASCALE_KERNELS");
  const KernelTable* candidates[] = {avx512Table(), avx2Table(), &scalarTable()};
  for (const KernelTable* t : candidates) {
    if (t == nullptr || !cpuSupports(*t)) continue;
    if (wanted == "auto" || wanted == t->isa) return *t;
  }
  if (wanted != "auto") {
    MSC_LOG_WARN("MEGASCALE_KERNELS=%s is not available on this CPU or build; using the best available",
                 wanted.c_str());
    for (const KernelTable* t : candidates) {
      if (t != nullptr && cpuSupports(*t)) return *t;
    }
  }
  return scalarTable();
}

}  // namespace

const KernelTable& activeTable() {
  static const KernelTable& table = choose();
  return table;
}

}  // namespace megascale::kernels
