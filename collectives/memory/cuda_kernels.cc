#include "collectives/memory/cuda_kernels.h"

// MEGASCALE_CUDA_FATBIN names the fatbin nvcc built (collectives/CMakeLists.txt); the assembler embeds its bytes.
#ifdef MEGASCALE_CUDA_FATBIN
asm(".pushsection .rodata\n"
    ".balign 64\n"
    ".hidden megascale_cuda_fatbin_begin\n"
    ".globl megascale_cuda_fatbin_begin\n"
    "megascale_cuda_fatbin_begin:\n"
    ".incbin \"" MEGASCALE_CUDA_FATBIN "\"\n"
    ".hidden megascale_cuda_fatbin_end\n"
    ".globl megascale_cuda_fatbin_end\n"
    "megascale_cuda_fatbin_end:\n"
    ".popsection\n");
extern "C" const unsigned char megascale_cuda_fatbin_begin[];
extern "C" const unsigned char megascale_cuda_fatbin_end[];
#endif

namespace megascale::memory {

namespace {

const char* kernelTypeName(mscDataType_t type) {
  switch (type) {
    case mscInt8: return "i8";
    case mscUint8: return "u8";
    case mscInt32: return "i32";
    case mscUint32: return "u32";
    case mscInt64: return "i64";
    case mscUint64: return "u64";
    case mscFloat16: return "f16";
    case mscFloat32: return "f32";
    case mscFloat64: return "f64";
    case mscBfloat16: return "bf16";
    default: return "unknown";
  }
}

const char* kernelOpName(mscRedOp_t op) {
  switch (op) {
    case mscProd: return "prod";
    case mscMax: return "max";
    case mscMin: return "min";
    default: return "sum";  // sum, and avg (divided once at the end)
  }
}

}  // namespace

KernelImage cudaKernelImage() {
#ifdef MEGASCALE_CUDA_FATBIN
  return KernelImage{megascale_cuda_fatbin_begin,
                     static_cast<size_t>(megascale_cuda_fatbin_end - megascale_cuda_fatbin_begin)};
#else
  return KernelImage{};
#endif
}

std::string cudaReduceKernelName(mscDataType_t type, mscRedOp_t op) {
  return std::string("msc_reduce_") + kernelTypeName(type) + "_" + kernelOpName(op);
}

std::string cudaDivideKernelName(mscDataType_t type) { return std::string("msc_divide_") + kernelTypeName(type); }

}  // namespace megascale::memory
