// Internal: the AMX kernel and the CPU checks behind gemm_bf16.cc.
#pragma once

#include "trainer/kernels/gemm_bf16.h"

namespace megascale::trainer {

/// AMX-TILE + AMX-BF16 present and the kernel granted this process the tile state.
bool amxUsable();
bool avx512Bf16Present();
/// Both require their CPU feature, k > 0 and beta 0 or 1.
void gemmAmx(const GemmBf16Call& call);
void gemmAvx512Bf16(const GemmBf16Call& call);

}  // namespace megascale::trainer
