// A CUDA GPU as a memory space: device memory from the driver, pinned host memory for staging, and an engine
// whose queue is a CUDA stream of the communicator's: copies are cuMemcpyAsync, reductions our kernels
// (kernels/cuda/reduce_kernels.cu) launched by name, and each item's completion an event the executor polls, so
// the progress engine never blocks on the GPU. Everything goes through the driver API loaded at run time
// (cuda_api.h) in the device's primary context.
#pragma once

#include <memory>
#include <string>

#include "common/cuda_api.h"
#include "collectives/memory/memory_space.h"
#include "megascale/megascale.h"

namespace megascale::memory {

class CudaSpace : public MemorySpace {
 public:
  /// The space of the GPU of ordinal `device` (made at its first use, then kept): kUnavailable, saying what is
  /// missing, without a driver or where this build has no CUDA kernels.
  static Status forDevice(int device, CudaSpace** space);
  /// The GPU of the rank that is `local_rank` on its host: local rank modulo the GPUs the driver sees, as
  /// nccl-tests picks. kUnavailable "needs a GPU: <what is missing>" where there is none.
  static Status forLocalRank(int local_rank, CudaSpace** space);
  /// The GPUs the driver sees (CUDA_VISIBLE_DEVICES applied); 0 without a driver.
  static int deviceCount();
  /// Whether `data` is CUDA device memory, and on which GPU.
  static bool deviceOf(const void* data, int* device);

  std::string name() const override { return "cuda:" + std::to_string(device_); }
  bool contains(const void* data) const override;
  void* allocate(size_t bytes) override;
  void release(void* data) override;
  void* allocateStaging(size_t bytes) override;
  void releaseStaging(void* data) override;
  Status openQueue(std::unique_ptr<EngineQueue>* queue) override;

  CudaApi::Handle context() const { return context_; }
  CudaApi::Handle reduceKernel(mscDataType_t type, mscRedOp_t op) const;
  CudaApi::Handle divideKernel(mscDataType_t type) const { return divide_[type]; }

 private:
  CudaSpace(int device, CudaApi::Handle context) : device_(device), context_(context) {}
  Status loadKernels();

  const int device_;
  const CudaApi::Handle context_;
  CudaApi::Handle module_ = nullptr;
  CudaApi::Handle reduce_[mscNumTypes][4] = {};
  CudaApi::Handle divide_[mscNumTypes] = {};
};

}  // namespace megascale::memory
