// The CUDA driver API, bound from libcuda.so.1 once a process at run time, for every layer that meets GPU memory:
// the transports (dma-buf export for RDMA, transport/cuda_memory.h) and the CUDA engine (collectives/memory/
// cuda_space.h). libmegascale needs no CUDA library to load, and says what is missing where a GPU buffer meets a
// machine or build without one. Handles are the driver's opaque pointers; CUresult is an int.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace megascale {

struct CudaApi {
  using Result = int;
  using Handle = void*;  // CUcontext, CUstream, CUevent, CUmodule, CUfunction
  static constexpr Result kSuccess = 0;
  static constexpr Result kNotReady = 600;            // CUDA_ERROR_NOT_READY
  static constexpr int kPointerMemoryType = 2;        // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
  static constexpr int kPointerDeviceOrdinal = 9;     // CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
  static constexpr unsigned kMemoryTypeDevice = 2;    // CU_MEMORYTYPE_DEVICE
  static constexpr unsigned kStreamNonBlocking = 1;   // CU_STREAM_NON_BLOCKING
  static constexpr unsigned kEventDisableTiming = 2;  // CU_EVENT_DISABLE_TIMING
  static constexpr unsigned kHostAllocPortable = 1;   // CU_MEMHOSTALLOC_PORTABLE
  static constexpr int kRangeHandleDmaBufFd = 1;      // CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD
  static constexpr int kDeviceAttributeDmaBufSupported = 124;  // CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED

  /// The process's binding, made at the first call (after the CUDA driver has been loaded by the user).
  static const CudaApi& get();
  /// Whether this build was compiled against the CUDA toolkit (the constants above checked against cuda.h).
  static bool builtWithCuda();
  /// Whether libcuda.so.1 loaded, has every required entry point and initialized with at least one device.
  bool loaded = false;
  std::string why;  // when not loaded: "cuda: ..."
  /// "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)" for `rc`.
  std::string errorText(Result rc) const;

  Result (*deviceGetCount)(int* count) = nullptr;
  Result (*pointerGetAttribute)(void* value, int attribute, uintptr_t pointer) = nullptr;
  Result (*devicePrimaryCtxRetain)(Handle* context, int device) = nullptr;
  Result (*deviceGet)(int* device, int ordinal) = nullptr;
  Result (*ctxPushCurrent)(Handle context) = nullptr;
  Result (*ctxPopCurrent)(Handle* context) = nullptr;
  Result (*memAlloc)(uintptr_t* pointer, size_t bytes) = nullptr;
  Result (*memFree)(uintptr_t pointer) = nullptr;
  Result (*memHostAlloc)(void** pointer, size_t bytes, unsigned flags) = nullptr;
  Result (*memFreeHost)(void* pointer) = nullptr;
  Result (*streamCreate)(Handle* stream, unsigned flags) = nullptr;
  Result (*streamDestroy)(Handle stream) = nullptr;
  Result (*streamSynchronize)(Handle stream) = nullptr;
  Result (*streamQuery)(Handle stream) = nullptr;
  Result (*eventCreate)(Handle* event, unsigned flags) = nullptr;
  Result (*eventRecord)(Handle event, Handle stream) = nullptr;
  Result (*eventQuery)(Handle event) = nullptr;
  Result (*eventDestroy)(Handle event) = nullptr;
  Result (*memcpyAsync)(uintptr_t dst, uintptr_t src, size_t bytes, Handle stream) = nullptr;
  Result (*moduleLoadData)(Handle* module, const void* image) = nullptr;
  Result (*moduleGetFunction)(Handle* function, Handle module, const char* name) = nullptr;
  Result (*launchKernel)(Handle function, unsigned grid_x, unsigned grid_y, unsigned grid_z, unsigned block_x,
                         unsigned block_y, unsigned block_z, unsigned shared_bytes, Handle stream, void** params,
                         void** extra) = nullptr;
  Result (*getErrorName)(Result rc, const char** text) = nullptr;
  Result (*getErrorString)(Result rc, const char** text) = nullptr;
  Result (*deviceGetAttribute)(int* value, int attribute, int device) = nullptr;
  // Optional (null where the driver lacks them): dma-buf export is CUDA 11.7+.
  Result (*memGetHandleForAddressRange)(void* handle, uintptr_t pointer, size_t bytes, int type,
                                        unsigned long long flags) = nullptr;
  Result (*deviceGetPCIBusId)(char* bus_id, int length, int device) = nullptr;

 private:
  CudaApi();
};

}  // namespace megascale
