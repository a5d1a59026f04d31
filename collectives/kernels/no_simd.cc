// Builds for CPUs other than x86-64 have only the scalar table.
#include "collectives/kernels/kernel_table.h"

namespace megascale::kernels {

const KernelTable* avx2Table() { return nullptr; }
const KernelTable* avx512Table() { return nullptr; }

}  // namespace megascale::kernels
