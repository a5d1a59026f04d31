#include "collectives/memory/memory_space.h"

#include <link.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "collectives/memory/cuda_space.h"

namespace megascale::memory {

namespace {

struct SpaceRegistry {
  std::shared_mutex mutex;
  std::vector<MemorySpace*> spaces;
  std::atomic<size_t> count{0};  // spaces.size(), read without the lock: most processes register none
  std::mutex copy_mutex;  // guards copy_queues; a blocking copy holds it while it waits
  std::map<MemorySpace*, std::unique_ptr<EngineQueue>> copy_queues;
};

SpaceRegistry& spaceRegistry() {
  static SpaceRegistry* r = new SpaceRegistry;  // never destroyed: spaces may unregister from static destructors
  return *r;
}

// Whether the process has loaded the CUDA driver (a CUDA allocation needs it): until it has, no pointer is CUDA
// memory, and a host-only process never pays for the driver's initialization.
bool cudaDriverLoaded() {
  static std::atomic<bool> loaded{false};
  static std::atomic<unsigned long long> scanned_at_loads{~0ULL};
  if (loaded.load(std::memory_order_relaxed)) return true;
  // The loaded objects are scanned again only after the loader's count of loads changed (13 ns a call here, where
  // dlopen(RTLD_NOLOAD) took 18 us).
  struct Scan {
    unsigned long long known, loads = 0;
    bool first = true, found = false;
  } scan{scanned_at_loads.load(std::memory_order_relaxed)};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Scan*>(data);
        if (s->first) {
          s->first = false;
          s->loads = info->dlpi_adds;
          if (s->loads == s->known) return 1;
        }
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, "libcuda.so") != nullptr) s->found = true;
        return s->found ? 1 : 0;
      },
      &scan);
  if (scan.found) {
    loaded.store(true, std::memory_order_relaxed);
    return true;
  }
  scanned_at_loads.store(scan.loads, std::memory_order_relaxed);
  return false;
}

std::string addressText(const void* data) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", data);
  return text;
}

}  // namespace

QueueCache::QueueCache() = default;
QueueCache::~QueueCache() = default;

Status QueueCache::queueFor(MemorySpace* space, EngineQueue** queue) {
  std::lock_guard lock(mutex_);
  std::unique_ptr<EngineQueue>& q = queues_[space];
  if (!q) MSC_RETURN_IF_ERROR(space->openQueue(&q));
  *queue = q.get();
  return Status::ok();
}

Status spaceOf(const void* data, MemorySpace** space) {
  *space = nullptr;
  SpaceRegistry& r = spaceRegistry();
  if (r.count.load(std::memory_order_acquire) > 0) {
    std::shared_lock lock(r.mutex);
    for (MemorySpace* s : r.spaces) {
      if (s->contains(data)) {
        *space = s;
        return Status::ok();
      }
    }
  }
  int device = -1;
  if (!cudaDriverLoaded() || !CudaSpace::deviceOf(data, &device)) return Status::ok();
  CudaSpace* cuda = nullptr;
  Status s = CudaSpace::forDevice(device, &cuda);
  if (!s.isOk()) {
    return Status(s.code(), "the buffer at " + addressText(data) + " is memory of GPU " + std::to_string(device) + ": " +
                                s.message());
  }
  *space = cuda;
  return Status::ok();
}

bool onDevice(std::initializer_list<const void*> buffers) {
  if (spaceRegistry().count.load(std::memory_order_acquire) == 0 && !cudaDriverLoaded()) return false;
  for (const void* data : buffers) {
    MemorySpace* space = nullptr;
    if (!spaceOf(data, &space).isOk() || space != nullptr) return true;
  }
  return false;
}

void registerSpace(MemorySpace* space) {
  SpaceRegistry& r = spaceRegistry();
  std::unique_lock lock(r.mutex);
  if (std::find(r.spaces.begin(), r.spaces.end(), space) == r.spaces.end()) r.spaces.push_back(space);
  r.count.store(r.spaces.size(), std::memory_order_release);
}

void unregisterSpace(MemorySpace* space) {
  SpaceRegistry& r = spaceRegistry();
  {
    std::lock_guard copy_lock(r.copy_mutex);
    r.copy_queues.erase(space);
  }
  std::unique_lock lock(r.mutex);
  r.spaces.erase(std::remove(r.spaces.begin(), r.spaces.end(), space), r.spaces.end());
  r.count.store(r.spaces.size(), std::memory_order_release);
}

Status copyBlocking(void* dst, const void* src, size_t bytes, std::chrono::milliseconds limit) {
  if (bytes == 0) return Status::ok();
  MemorySpace* to = nullptr;
  MemorySpace* from = nullptr;
  MSC_RETURN_IF_ERROR(spaceOf(dst, &to));
  MSC_RETURN_IF_ERROR(spaceOf(src, &from));
  MemorySpace* space = to != nullptr ? to : from;
  if (space == nullptr) {
    std::memmove(dst, src, bytes);
    return Status::ok();
  }
  if (from != nullptr && to != nullptr && from != to) {
    return Status(ErrorCode::kInvalidArgument, "a copy from " + from->name() + " to " + to->name() +
                                                   ": copies between two device spaces go through the host");
  }
  SpaceRegistry& r = spaceRegistry();
  std::lock_guard lock(r.copy_mutex);
  std::unique_ptr<EngineQueue>& queue = r.copy_queues[space];
  if (!queue) MSC_RETURN_IF_ERROR(space->openQueue(&queue));
  uint64_t ticket = 0;
  MSC_RETURN_IF_ERROR(queue->copy(dst, src, bytes, &ticket));
  return queue->drain(limit);
}

}  // namespace megascale::memory
