#include "transport/cuda_memory.h"

#include <mutex>

#include "common/dynamic_library.h"

#ifdef MEGASCALE_WITH_CUDA
#include <cuda.h>
#endif

namespace megascale::transport {

namespace {

// The CUDA driver API's values this file uses; with the toolkit present they are checked against cuda.h.
constexpr int kSuccess = 0;
constexpr int kPointerAttributeMemoryType = 2;
constexpr int kMemoryTypeDevice = 2;
constexpr int kRangeHandleDmaBufFd = 1;
constexpr int kDeviceAttributeDmaBufSupported = 124;

#ifdef MEGASCALE_WITH_CUDA
static_assert(CUDA_SUCCESS == kSuccess);
static_assert(CU_POINTER_ATTRIBUTE_MEMORY_TYPE == kPointerAttributeMemoryType);
static_assert(CU_MEMORYTYPE_DEVICE == kMemoryTypeDevice);
static_assert(CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD == kRangeHandleDmaBufFd);
static_assert(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED == kDeviceAttributeDmaBufSupported);
static_assert(sizeof(CUdeviceptr) == sizeof(uintptr_t) && sizeof(CUdevice) == sizeof(int));
#endif

constexpr char kLibrary[] = "libcuda.so.1";

}  // namespace

PageRange pageRangeFor(uintptr_t data, size_t size, size_t page_bytes) {
  PageRange r;
  const uintptr_t mask = ~(static_cast<uintptr_t>(page_bytes) - 1);
  r.begin = data & mask;
  const uintptr_t end = (data + size + page_bytes - 1) & mask;
  r.bytes = static_cast<size_t>(end - r.begin);
  r.offset = data - r.begin;
  return r;
}

bool CudaDriver::builtWithCuda() {
#ifdef MEGASCALE_WITH_CUDA
  return true;
#else
  return false;
#endif
}

const CudaDriver& CudaDriver::get() {
  static const CudaDriver driver;
  return driver;
}

CudaDriver::CudaDriver() {
  std::string why;
  void* library = openLibrary(kLibrary, &why);
  if (library == nullptr) {
    why_ = "cuda: " + why + " (no NVIDIA driver on this host)";
    return;
  }
  int (*init)(unsigned) = nullptr;
  int (*device_count)(int*) = nullptr;
  int (*device_attribute)(int*, int, int) = nullptr;
  int (*device_get)(int*, int) = nullptr;
  int (*device_bus_id)(char*, int, int) = nullptr;
  std::string missing;
  bindSymbol(library, "cuInit", &init, &missing);
  bindSymbol(library, "cuDeviceGetCount", &device_count, &missing);
  bindSymbol(library, "cuDeviceGetAttribute", &device_attribute, &missing);
  bindSymbol(library, "cuPointerGetAttribute", &pointer_get_attribute_, &missing);
  bindSymbol(library, "cuGetErrorString", &get_error_string_, &missing);
  bindSymbol(library, "cuMemGetHandleForAddressRange", &mem_get_handle_for_address_range_, nullptr);  // 11.7+
  bindSymbol(library, "cuDeviceGet", &device_get, nullptr);
  bindSymbol(library, "cuDeviceGetPCIBusId", &device_bus_id, nullptr);
  if (!missing.empty()) {
    why_ = std::string("cuda: ") + kLibrary + " lacks " + missing;
    return;
  }
  int devices = 0;
  const int rc = init(0);
  if (rc != kSuccess || device_count(&devices) != kSuccess || devices == 0) {
    why_ = "cuda: the driver found no usable GPU (cuInit returned " + std::to_string(rc) + ")";
    return;
  }
  available_ = true;
  for (int ordinal = 0; ordinal < devices && device_get != nullptr && device_bus_id != nullptr; ++ordinal) {
    int device = 0;
    char bus_id[32] = {};
    const bool known = device_get(&device, ordinal) == kSuccess &&
                       device_bus_id(bus_id, sizeof(bus_id), device) == kSuccess;
    gpu_bus_ids_.push_back(known ? bus_id : "");
  }
  int supported = 0;
  dma_buf_supported_ = mem_get_handle_for_address_range_ != nullptr &&
                       device_attribute(&supported, kDeviceAttributeDmaBufSupported, 0) == kSuccess && supported != 0;
  if (!dma_buf_supported_) why_ = "cuda: the driver or GPU 0 cannot export device memory as dma-buf";
}

bool CudaDriver::isDevicePointer(const void* data) const {
  if (!available_) return false;
  unsigned int type = 0;
  return pointer_get_attribute_(&type, kPointerAttributeMemoryType, reinterpret_cast<uintptr_t>(data)) == kSuccess &&
         type == kMemoryTypeDevice;
}

Status CudaDriver::exportDmaBuf(const PageRange& range, int* fd) const {
  char where[96];
  std::snprintf(where, sizeof(where), "%zu bytes of device memory at 0x%llx", range.bytes,
                static_cast<unsigned long long>(range.begin));
  if (!available_ || !dma_buf_supported_) {
    return Status(ErrorCode::kUnavailable, std::string("exporting ") + where + " as dma-buf: " + why_);
  }
  const int rc = mem_get_handle_for_address_range_(fd, range.begin, range.bytes, kRangeHandleDmaBufFd, 0);
  if (rc != kSuccess) {
    const char* text = nullptr;
    get_error_string_(rc, &text);
    return Status(ErrorCode::kSystem, std::string("cuMemGetHandleForAddressRange for ") + where + " failed: " +
                                          (text != nullptr ? text : std::to_string(rc)));
  }
  return Status::ok();
}

}  // namespace megascale::transport
