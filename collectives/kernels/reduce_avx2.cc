// The avx2 kernel table: reduce_isa.inc compiled with this file's instruction-set flags (see CMakeLists).
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <immintrin.h>

#include "collectives/kernels/half_float.h"
#include "collectives/kernels/kernel_table.h"

namespace megascale::kernels {

namespace {
#include "collectives/kernels/reduce_isa.inc"
}  // namespace

const KernelTable* avx2TableUnchecked() {
  static const KernelTable table = makeTable("avx2");
  return &table;
}

}  // namespace megascale::kernels
