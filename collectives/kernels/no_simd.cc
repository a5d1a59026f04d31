// Builds for CPUs other than x86-64 have only the scalar table.
#include "collectives/kernels/kernel_table.h"

namespace megascale::kernels {

const KernelTable* avx2TableUnchecked() { return nullptr; }
const KernelTable* avx512TableUnchecked() { return nullptr; }

}  // namespace megascale::kernels
