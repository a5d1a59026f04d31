#include "transport/cuda_memory.h"

#include <cstdio>

#include "common/cuda_api.h"

namespace megascale::transport {

PageRange pageRangeFor(uintptr_t data, size_t size, size_t page_bytes) {
  PageRange r;
  const uintptr_t mask = ~(static_cast<uintptr_t>(page_bytes) - 1);
  r.begin = data & mask;
  const uintptr_t end = (data + size + page_bytes - 1) & mask;
  r.bytes = static_cast<size_t>(end - r.begin);
  r.offset = data - r.begin;
  return r;
}

bool CudaDriver::builtWithCuda() { return CudaApi::builtWithCuda(); }

const CudaDriver& CudaDriver::get() {
  static const CudaDriver driver;
  return driver;
}

CudaDriver::CudaDriver() {
  const CudaApi& api = CudaApi::get();
  if (!api.loaded) {
    why_ = api.why;
    return;
  }
  available_ = true;
  int devices = 0;
  api.deviceGetCount(&devices);
  for (int ordinal = 0; ordinal < devices && api.deviceGetPCIBusId != nullptr; ++ordinal) {
    int device = 0;
    char bus_id[32] = {};
    const bool known = api.deviceGet(&device, ordinal) == CudaApi::kSuccess &&
                       api.deviceGetPCIBusId(bus_id, sizeof(bus_id), device) == CudaApi::kSuccess;
    gpu_bus_ids_.push_back(known ? bus_id : "");
  }
  int supported = 0;
  dma_buf_supported_ = api.memGetHandleForAddressRange != nullptr &&
                       api.deviceGetAttribute(&supported, CudaApi::kDeviceAttributeDmaBufSupported, 0) == CudaApi::kSuccess &&
                       supported != 0;
  if (!dma_buf_supported_) why_ = "cuda: the driver or GPU 0 cannot export device memory as dma-buf";
}

bool CudaDriver::isDevicePointer(const void* data) const {
  if (!available_) return false;
  const CudaApi& api = CudaApi::get();
  unsigned int type = 0;
  return api.pointerGetAttribute(&type, CudaApi::kPointerMemoryType, reinterpret_cast<uintptr_t>(data)) ==
             CudaApi::kSuccess &&
         type == CudaApi::kMemoryTypeDevice;
}

Status CudaDriver::exportDmaBuf(const PageRange& range, int* fd) const {
  char where[96];
  std::snprintf(where, sizeof(where), "%zu bytes of device memory at 0x%llx", range.bytes,
                static_cast<unsigned long long>(range.begin));
  if (!available_ || !dma_buf_supported_) {
    return Status(ErrorCode::kUnavailable, std::string("exporting ") + where + " as dma-buf: " + why_);
  }
  const CudaApi& api = CudaApi::get();
  const CudaApi::Result rc =
      api.memGetHandleForAddressRange(fd, range.begin, range.bytes, CudaApi::kRangeHandleDmaBufFd, 0);
  if (rc != CudaApi::kSuccess) {
    return Status(ErrorCode::kSystem,
                  std::string("cuMemGetHandleForAddressRange for ") + where + " failed: " + api.errorText(rc));
  }
  return Status::ok();
}

}  // namespace megascale::transport
