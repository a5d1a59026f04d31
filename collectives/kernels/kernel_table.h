// Reduction kernels per instruction set, chosen once at run time: AVX-512 (F, BW, VL, DQ), AVX2 (+FMA, F16C),
// or portable scalar code. Every table computes bit-identical results (NaN payloads aside); the scalar one is
// the reference the others are tested against. MEGASCALE_KERNELS=scalar|avx2|avx512 forces a table.
#pragma once

#include <cstddef>

#include "megascale/megascale.h"

namespace megascale::kernels {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
using DivideFn = void (*)(void* buf, size_t count, int divisor);

constexpr int kOps = 4;  // sum, prod, max, min (avg reduces as sum)

struct KernelTable {
  const char* isa;
  ReduceFn reduce[mscNumTypes][kOps];
  DivideFn divide[mscNumTypes];
};

const KernelTable& scalarTable();
/// Null when the build could not compile that instruction set or this CPU cannot run it.
const KernelTable* avx2Table();
const KernelTable* avx512Table();
/// The tables as their instruction-set files build them (null where the build could not): their construction
/// runs that file's instructions (the compiler vectorizes it), so call them only on a CPU that supports them.
const KernelTable* avx2TableUnchecked();
const KernelTable* avx512TableUnchecked();

/// Whether this CPU can run an instruction set's ("avx512", "avx2", "scalar") or a table's instructions.
bool cpuSupports(const char* isa);
inline bool cpuSupports(const KernelTable& table) { return cpuSupports(table.isa); }

/// The table in use: the widest this CPU supports, unless MEGASCALE_KERNELS says otherwise.
const KernelTable& activeTable();

}  // namespace megascale::kernels
