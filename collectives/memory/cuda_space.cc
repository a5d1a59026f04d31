#include "collectives/memory/cuda_space.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <map>
#include <mutex>
#include <vector>

#include "collectives/memory/cuda_kernels.h"

namespace megascale::memory {

namespace {

constexpr unsigned kBlockThreads = 256;
constexpr unsigned long long kMaxBlocks = 4096;  // the kernels loop over the rest (grid-stride)

// The device's primary context on this thread for the scope (the progress thread has none of its own).
class ContextScope {
 public:
  explicit ContextScope(CudaApi::Handle context) : ok_(CudaApi::get().ctxPushCurrent(context) == CudaApi::kSuccess) {}
  ~ContextScope() {
    CudaApi::Handle popped = nullptr;
    if (ok_) CudaApi::get().ctxPopCurrent(&popped);
  }
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool ok_;
};

Status cudaFailure(const std::string& what, CudaApi::Result rc) {
  return Status(ErrorCode::kSystem, what + ": " + CudaApi::get().errorText(rc));
}

// One stream of the device, and an event per queued item: test() asks the item's event, so items finish (as
// far as the executor can tell) in stream order, and the thread that polls never waits on the GPU.
class CudaQueue : public EngineQueue {
 public:
  CudaQueue(CudaSpace& space, CudaApi::Handle stream) : space_(space), stream_(stream) {}
  // No wait: the driver frees a stream and its events once the work queued on them is done.
  ~CudaQueue() override {
    const CudaApi& api = CudaApi::get();
    ContextScope scope(space_.context());
    for (auto& [ticket, event] : events_) api.eventDestroy(event);
    for (CudaApi::Handle event : spare_events_) api.eventDestroy(event);
    api.streamDestroy(stream_);
  }

  Status copy(void* dst, const void* src, size_t bytes, uint64_t* ticket) override {
    std::lock_guard lock(mutex_);
    ContextScope scope(space_.context());
    const CudaApi::Result rc = CudaApi::get().memcpyAsync(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src),
                                                          bytes, stream_);
    if (rc != CudaApi::kSuccess) return cudaFailure(space_.name() + ": copying " + std::to_string(bytes) + " bytes", rc);
    return record(ticket);
  }

  Status reduce(mscDataType_t type, mscRedOp_t op, void* dst, const void* a, const void* b, size_t count,
                uint64_t* ticket) override {
    unsigned long long n = count;
    void* params[] = {&dst, &a, &b, &n};
    return launch(space_.reduceKernel(type, op), count, params, ticket);
  }

  Status divide(mscDataType_t type, void* buf, size_t count, int divisor, uint64_t* ticket) override {
    unsigned long long n = count;
    void* params[] = {&buf, &n, &divisor};
    return launch(space_.divideKernel(type), count, params, ticket);
  }

  Status test(uint64_t ticket, bool* done) override {
    std::lock_guard lock(mutex_);
    *done = false;
    auto it = events_.find(ticket);
    if (it == events_.end()) return Status(ErrorCode::kInternal, space_.name() + ": no queued item " + std::to_string(ticket));
    const CudaApi::Result rc = CudaApi::get().eventQuery(it->second);
    if (rc == CudaApi::kNotReady) return Status::ok();
    if (rc != CudaApi::kSuccess) return cudaFailure(space_.name() + ": a queued copy or reduction failed", rc);
    spare_events_.push_back(it->second);
    events_.erase(it);
    *done = true;
    return Status::ok();
  }

  // Polls the stream rather than synchronizing with it, so that a hung kernel costs the caller `limit`, not forever.
  Status drain(std::chrono::milliseconds limit) override {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    auto pause = std::chrono::microseconds(10);
    while (true) {
      CudaApi::Result rc;
      {
        std::lock_guard lock(mutex_);
        ContextScope scope(space_.context());
        rc = CudaApi::get().streamQuery(stream_);
      }
      if (rc == CudaApi::kSuccess) return Status::ok();
      if (rc != CudaApi::kNotReady) return cudaFailure(space_.name() + ": waiting for the stream", rc);
      if (std::chrono::steady_clock::now() >= deadline) {
        return Status(ErrorCode::kTimeout, space_.name() + ": the stream's work not finished after " +
                                               std::to_string(limit.count()) + " ms");
      }
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(1000));
    }
  }

 private:
  Status launch(CudaApi::Handle kernel, size_t count, void** params, uint64_t* ticket) {
    std::lock_guard lock(mutex_);
    if (kernel == nullptr) return Status(ErrorCode::kInternal, space_.name() + ": no kernel for this dtype and op");
    ContextScope scope(space_.context());
    const unsigned long long blocks = std::clamp<unsigned long long>((count + kBlockThreads - 1) / kBlockThreads, 1, kMaxBlocks);
    const CudaApi::Result rc = CudaApi::get().launchKernel(kernel, static_cast<unsigned>(blocks), 1, 1, kBlockThreads, 1, 1, 0,
                                                           stream_, params, nullptr);
    if (rc != CudaApi::kSuccess) return cudaFailure(space_.name() + ": launching a reduction", rc);
    return record(ticket);
  }

  // An event after the item just queued; mutex_ held, the context current.
  Status record(uint64_t* ticket) {
    const CudaApi& api = CudaApi::get();
    CudaApi::Handle event = nullptr;
    if (!spare_events_.empty()) {
      event = spare_events_.back();
      spare_events_.pop_back();
    } else {
      const CudaApi::Result rc = api.eventCreate(&event, CudaApi::kEventDisableTiming);
      if (rc != CudaApi::kSuccess) return cudaFailure(space_.name() + ": creating an event", rc);
    }
    const CudaApi::Result rc = api.eventRecord(event, stream_);
    if (rc != CudaApi::kSuccess) {
      spare_events_.push_back(event);
      return cudaFailure(space_.name() + ": recording an event", rc);
    }
    *ticket = ++last_ticket_;
    events_[*ticket] = event;
    return Status::ok();
  }

  CudaSpace& space_;
  const CudaApi::Handle stream_;
  std::mutex mutex_;
  std::map<uint64_t, CudaApi::Handle> events_;
  std::vector<CudaApi::Handle> spare_events_;
  uint64_t last_ticket_ = 0;
};

}  // namespace

int CudaSpace::deviceCount() {
  const CudaApi& api = CudaApi::get();
  int count = 0;
  return api.loaded && api.deviceGetCount(&count) == CudaApi::kSuccess ? count : 0;
}

bool CudaSpace::deviceOf(const void* data, int* device) {
  const CudaApi& api = CudaApi::get();
  if (!api.loaded) return false;
  unsigned type = 0;
  const auto at = reinterpret_cast<uintptr_t>(data);
  if (api.pointerGetAttribute(&type, CudaApi::kPointerMemoryType, at) != CudaApi::kSuccess ||
      type != CudaApi::kMemoryTypeDevice) {
    return false;
  }
  return api.pointerGetAttribute(device, CudaApi::kPointerDeviceOrdinal, at) == CudaApi::kSuccess;
}

Status CudaSpace::forLocalRank(int local_rank, CudaSpace** space) {
  const int gpus = deviceCount();
  if (gpus == 0) return Status(ErrorCode::kUnavailable, "needs a GPU: " + CudaApi::get().why);
  return forDevice(std::max(local_rank, 0) % gpus, space);
}

Status CudaSpace::forDevice(int device, CudaSpace** space) {
  static std::mutex mutex;
  static std::map<int, CudaSpace*> spaces;  // never destroyed: buffers and queues may outlive static destructors
  std::lock_guard lock(mutex);
  auto it = spaces.find(device);
  if (it != spaces.end()) {
    *space = it->second;
    return Status::ok();
  }
  const CudaApi& api = CudaApi::get();
  if (!api.loaded) return Status(ErrorCode::kUnavailable, api.why);
  if (cudaKernelImage().size == 0) {
    return Status(ErrorCode::kUnavailable, "cuda:" + std::to_string(device) +
                                               ": this build of megascale has no CUDA kernels (built without nvcc, or "
                                               "with -DMEGASCALE_WITH_CUDA=OFF)");
  }
  int handle = 0;
  CudaApi::Handle context = nullptr;
  CudaApi::Result rc = api.deviceGet(&handle, device);
  if (rc == CudaApi::kSuccess) rc = api.devicePrimaryCtxRetain(&context, handle);
  if (rc != CudaApi::kSuccess) return cudaFailure("cuda:" + std::to_string(device) + ": its primary context", rc);
  std::unique_ptr<CudaSpace> made(new CudaSpace(device, context));
  MSC_RETURN_IF_ERROR(made->loadKernels());
  *space = spaces[device] = made.release();
  return Status::ok();
}

Status CudaSpace::loadKernels() {
  const CudaApi& api = CudaApi::get();
  ContextScope scope(context_);
  CudaApi::Result rc = api.moduleLoadData(&module_, cudaKernelImage().data);
  if (rc != CudaApi::kSuccess) {
    return cudaFailure(name() + ": loading megascale's kernels (built for sm_80 and sm_90, PTX for newer)", rc);
  }
  for (int t = 0; t < mscNumTypes; ++t) {
    const auto type = static_cast<mscDataType_t>(t);
    for (mscRedOp_t op : {mscSum, mscProd, mscMax, mscMin}) {
      const std::string kernel = cudaReduceKernelName(type, op);
      rc = api.moduleGetFunction(&reduce_[t][op], module_, kernel.c_str());
      if (rc != CudaApi::kSuccess) return cudaFailure(name() + ": kernel " + kernel, rc);
    }
    const std::string kernel = cudaDivideKernelName(type);
    rc = api.moduleGetFunction(&divide_[t], module_, kernel.c_str());
    if (rc != CudaApi::kSuccess) return cudaFailure(name() + ": kernel " + kernel, rc);
  }
  return Status::ok();
}

CudaApi::Handle CudaSpace::reduceKernel(mscDataType_t type, mscRedOp_t op) const {
  return reduce_[type][op == mscAvg ? mscSum : op];
}

bool CudaSpace::contains(const void* data) const {
  int device = -1;
  return deviceOf(data, &device) && device == device_;
}

void* CudaSpace::allocate(size_t bytes) {
  ContextScope scope(context_);
  uintptr_t pointer = 0;
  return CudaApi::get().memAlloc(&pointer, std::max<size_t>(bytes, 1)) == CudaApi::kSuccess ? reinterpret_cast<void*>(pointer)
                                                                                            : nullptr;
}

void CudaSpace::release(void* data) {
  if (data == nullptr) return;
  ContextScope scope(context_);
  CudaApi::get().memFree(reinterpret_cast<uintptr_t>(data));
}

void* CudaSpace::allocateStaging(size_t bytes) {
  ContextScope scope(context_);
  void* pointer = nullptr;
  return CudaApi::get().memHostAlloc(&pointer, std::max<size_t>(bytes, 1), CudaApi::kHostAllocPortable) == CudaApi::kSuccess
             ? pointer
             : nullptr;
}

void CudaSpace::releaseStaging(void* data) {
  if (data == nullptr) return;
  ContextScope scope(context_);
  CudaApi::get().memFreeHost(data);
}

Status CudaSpace::openQueue(std::unique_ptr<EngineQueue>* queue) {
  ContextScope scope(context_);
  CudaApi::Handle stream = nullptr;
  const CudaApi::Result rc = CudaApi::get().streamCreate(&stream, CudaApi::kStreamNonBlocking);
  if (rc != CudaApi::kSuccess) return cudaFailure(name() + ": creating a stream", rc);
  *queue = std::make_unique<CudaQueue>(*this, stream);
  return Status::ok();
}

}  // namespace megascale::memory
