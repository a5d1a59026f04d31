// Internal: the pieces gemm.cc assembles into the backend list.
#pragma once

#include <vector>

#include "trainer/kernels/gemm.h"

namespace megascale::trainer {

/// Our blocked kernel: AVX-512 when the CPU has it, else the portable blocked loop.
bool cpuHasAvx512();
void gemmAvx512(const GemmCall<float>& call);
template <typename T>
void gemmPortable(const GemmCall<T>& call);

/// oneDNN, OpenBLAS and BLIS, each only when its shared library opens.
void appendLibraryBackends(std::vector<GemmBackend>& out);

}  // namespace megascale::trainer
