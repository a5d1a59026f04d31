// The CUDA engine's kernels as the build left them: a fatbin of kernels/cuda/reduce_kernels.cu (sm_80 and sm_90
// code, sm_90 PTX for newer GPUs) that nvcc built and the library embeds where the toolkit was found, loaded through
// the driver at run time (cuModuleLoadData), and the names the engine looks its kernels up by.
#pragma once

#include <cstddef>
#include <string>

#include "megascale/megascale.h"

namespace megascale::memory {

struct KernelImage {
  const unsigned char* data = nullptr;
  size_t size = 0;  // 0: this build has no CUDA kernels (built without nvcc, or a sanitizer pass)
};
KernelImage cudaKernelImage();

/// "msc_reduce_f32_sum" (avg reduces as sum), "msc_divide_bf16": reduce_kernels.cu's names.
std::string cudaReduceKernelName(mscDataType_t type, mscRedOp_t op);
std::string cudaDivideKernelName(mscDataType_t type);

}  // namespace megascale::memory
