// GPU memory as an RDMA NIC reaches it: by dma-buf (cuMemGetHandleForAddressRange gives a file descriptor for a
// range of device memory; ibv_reg_dmabuf_mr registers it). The CUDA driver is the process's one binding
// (common/cuda_api.h, opened at run time), so libmegascale loads on machines without GPUs and says so when device
// memory is asked for there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace megascale::transport {

/// The whole host pages that hold [data, data + size), and where `data` lies in them: the range
/// cuMemGetHandleForAddressRange exports (it refuses others), and the range a host registration covers.
struct PageRange {
  uintptr_t begin = 0;
  size_t bytes = 0;
  uint64_t offset = 0;  // of data from begin: ibv_reg_dmabuf_mr's offset argument
};
PageRange pageRangeFor(uintptr_t data, size_t size, size_t page_bytes);

class CudaDriver {
 public:
  /// The process's driver, opened at the first call.
  static const CudaDriver& get();

  /// Whether libcuda.so.1 loaded and initialized with at least one device; why() says why not.
  bool available() const { return available_; }
  const std::string& why() const { return why_; }
  /// Whether this build was compiled against the CUDA toolkit (its constants checked against cuda.h).
  static bool builtWithCuda();
  /// Whether the driver can export device memory as dma-buf (CUDA 11.7+, a device that supports it).
  bool dmaBufSupported() const { return dma_buf_supported_; }
  /// The PCI bus id ("0000:3b:00.0") of each GPU the process sees (CUDA_VISIBLE_DEVICES applied), by ordinal;
  /// empty without a driver.
  const std::vector<std::string>& gpuBusIds() const { return gpu_bus_ids_; }
  /// Whether `data` is device memory. False without a driver.
  bool isDevicePointer(const void* data) const;
  /// A dma-buf descriptor for the aligned `range` (the caller closes it). kUnavailable without a driver or
  /// dma-buf support, kSystem when the driver refuses; the message names the address and the driver's error.
  Status exportDmaBuf(const PageRange& range, int* fd) const;

 private:
  CudaDriver();

  bool available_ = false;
  bool dma_buf_supported_ = false;
  std::string why_;
  std::vector<std::string> gpu_bus_ids_;
};

}  // namespace megascale::transport
