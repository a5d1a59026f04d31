#include "common/cuda_api.h"

#include "common/dynamic_library.h"

#ifdef MEGASCALE_WITH_CUDA
#include <cuda.h>
#endif

namespace megascale {

#ifdef MEGASCALE_WITH_CUDA
static_assert(CUDA_SUCCESS == CudaApi::kSuccess && CUDA_ERROR_NOT_READY == CudaApi::kNotReady);
static_assert(CU_POINTER_ATTRIBUTE_MEMORY_TYPE == CudaApi::kPointerMemoryType);
static_assert(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == CudaApi::kPointerDeviceOrdinal);
static_assert(CU_MEMORYTYPE_DEVICE == CudaApi::kMemoryTypeDevice);
static_assert(CU_STREAM_NON_BLOCKING == CudaApi::kStreamNonBlocking);
static_assert(CU_EVENT_DISABLE_TIMING == CudaApi::kEventDisableTiming);
static_assert(CU_MEMHOSTALLOC_PORTABLE == CudaApi::kHostAllocPortable);
static_assert(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD == CudaApi::kRangeHandleDmaBufFd);
static_assert(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED == CudaApi::kDeviceAttributeDmaBufSupported);
static_assert(sizeof(CUdeviceptr) == sizeof(uintptr_t) && sizeof(CUdevice) == sizeof(int));
static_assert(sizeof(CUstream) == sizeof(void*) && sizeof(CUcontext) == sizeof(void*) && sizeof(CUfunction) == sizeof(void*));
#endif

bool CudaApi::builtWithCuda() {
#ifdef MEGASCALE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

const CudaApi& CudaApi::get() {
  static const CudaApi api;
  return api;
}

CudaApi::CudaApi() {
  void* library = openLibrary("libcuda.so.1", &why);
  if (library == nullptr) {
    why = "cuda: " + why + " (no NVIDIA driver on this host)";
    return;
  }
  std::string missing;
  Result (*init)(unsigned) = nullptr;
  bindSymbol(library, "cuInit", &init, &missing);
  bindSymbol(library, "cuDeviceGetCount", &deviceGetCount, &missing);
  bindSymbol(library, "cuPointerGetAttribute", &pointerGetAttribute, &missing);
  bindSymbol(library, "cuDevicePrimaryCtxRetain", &devicePrimaryCtxRetain, &missing);
  bindSymbol(library, "cuDeviceGet", &deviceGet, &missing);
  bindSymbol(library, "cuCtxPushCurrent_v2", &ctxPushCurrent, &missing);
  bindSymbol(library, "cuCtxPopCurrent_v2", &ctxPopCurrent, &missing);
  bindSymbol(library, "cuMemAlloc_v2", &memAlloc, &missing);
  bindSymbol(library, "cuMemFree_v2", &memFree, &missing);
  bindSymbol(library, "cuMemHostAlloc", &memHostAlloc, &missing);
  bindSymbol(library, "cuMemFreeHost", &memFreeHost, &missing);
  bindSymbol(library, "cuStreamCreate", &streamCreate, &missing);
  bindSymbol(library, "cuStreamDestroy_v2", &streamDestroy, &missing);
  bindSymbol(library, "cuStreamSynchronize", &streamSynchronize, &missing);
  bindSymbol(library, "cuStreamQuery", &streamQuery, &missing);
  bindSymbol(library, "cuEventCreate", &eventCreate, &missing);
  bindSymbol(library, "cuEventRecord", &eventRecord, &missing);
  bindSymbol(library, "cuEventQuery", &eventQuery, &missing);
  bindSymbol(library, "cuEventDestroy_v2", &eventDestroy, &missing);
  bindSymbol(library, "cuMemcpyAsync", &memcpyAsync, &missing);
  bindSymbol(library, "cuModuleLoadData", &moduleLoadData, &missing);
  bindSymbol(library, "cuModuleGetFunction", &moduleGetFunction, &missing);
  bindSymbol(library, "cuLaunchKernel", &launchKernel, &missing);
  bindSymbol(library, "cuGetErrorName", &getErrorName, &missing);
  bindSymbol(library, "cuGetErrorString", &getErrorString, &missing);
  bindSymbol(library, "cuDeviceGetAttribute", &deviceGetAttribute, &missing);
  bindSymbol(library, "cuMemGetHandleForAddressRange", &memGetHandleForAddressRange, nullptr);
  bindSymbol(library, "cuDeviceGetPCIBusId", &deviceGetPCIBusId, nullptr);
  if (!missing.empty()) {
    why = "cuda: libcuda.so.1 lacks " + missing;
    return;
  }
  int devices = 0;
  const Result rc = init(0);  // idempotent: the user's CUDA runtime has called it already where its memory exists
  if (rc != kSuccess || deviceGetCount(&devices) != kSuccess || devices == 0) {
    why = "cuda: the driver found no usable GPU (cuInit returned " + std::to_string(rc) + ")";
    return;
  }
  loaded = true;
}

std::string CudaApi::errorText(Result rc) const {
  const char* name = nullptr;
  const char* text = nullptr;
  if (getErrorName != nullptr) getErrorName(rc, &name);
  if (getErrorString != nullptr) getErrorString(rc, &text);
  return std::string(name != nullptr ? name : "CUDA error " + std::to_string(rc)) + " (" +
         (text != nullptr ? text : "no description") + ")";
}

}  // namespace megascale
