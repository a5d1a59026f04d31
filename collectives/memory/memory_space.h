// Memory spaces and their execution engines (after UCC's memory components and execution engines). A schedule
// names buffers, never a space: the executor finds the space of an operation's buffers once, from their
// addresses, and hands that space's copies and reductions to its engine. Host memory needs no space object: its
// steps run inline on the executor's thread, as they always did (the host path costs nothing new). A device space
// (CUDA, or the fake device that stands in for one here) queues them and completes them later: the executor
// posts a step, polls its ticket, and never blocks on the device.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "megascale/megascale.h"

namespace megascale::memory {

/// An ordered queue of device work owned by one user (a communicator's stream): copies and reductions run in the
/// space's memory, a ticket tells when each has finished. Work whose inputs another queued item writes is never
/// queued before that item finishes (the executor's data flow sees to it), so a queue may run its items in any
/// order. Thread-safe (runs of one communicator may be driven by different threads).
class EngineQueue {
 public:
  virtual ~EngineQueue() = default;
  /// dst = src, `bytes` of them; either side may be host memory the device can reach (a staging buffer).
  virtual Status copy(void* dst, const void* src, size_t bytes, uint64_t* ticket) = 0;
  /// dst[i] = a[i] op b[i] for i < count, bit for bit as the host kernels (reduce_kernels.h); avg as sum.
  virtual Status reduce(mscDataType_t type, mscRedOp_t op, void* dst, const void* a, const void* b, size_t count,
                        uint64_t* ticket) = 0;
  /// buf[i] /= divisor, as finishAverage.
  virtual Status divide(mscDataType_t type, void* buf, size_t count, int divisor, uint64_t* ticket) = 0;
  /// Whether the item of `ticket` has finished; an error is the device's (the queue is unusable after it).
  virtual Status test(uint64_t ticket, bool* done) = 0;
  /// Waits until every item queued so far has finished, for at most `limit`: kTimeout when the device has not
  /// finished them by then (a hung kernel), so that no caller waits forever on a device.
  virtual Status drain(std::chrono::milliseconds limit) = 0;
};

/// A kind of memory other than plain host memory, with its allocator and engine.
class MemorySpace {
 public:
  virtual ~MemorySpace() = default;
  /// "fake-device", "cuda:0": for messages.
  virtual std::string name() const = 0;
  /// Whether `data` lies in this space.
  virtual bool contains(const void* data) const = 0;
  /// Device memory of this space (scratch); null when it is short. Freed with release().
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* data) = 0;
  /// Host memory the device reaches at full speed (CUDA: pinned), for staging transfers; freed with
  /// releaseStaging().
  virtual void* allocateStaging(size_t bytes) = 0;
  virtual void releaseStaging(void* data) = 0;
  /// A new queue (a stream of its own).
  virtual Status openQueue(std::unique_ptr<EngineQueue>* queue) = 0;
};

/// A user's queues, one per space, opened at first use (a communicator's streams).
class QueueCache {
 public:
  QueueCache();
  ~QueueCache();
  Status queueFor(MemorySpace* space, EngineQueue** queue);

 private:
  std::mutex mutex_;
  std::map<MemorySpace*, std::unique_ptr<EngineQueue>> queues_;
};

/// Where `data` lies: a registered space, or null for host memory. CUDA device memory without a CUDA engine in
/// this build gives kUnavailable (never a host copy from device memory).
Status spaceOf(const void* data, MemorySpace** space);

/// Whether any of `buffers` is device memory: a registered space's, or CUDA memory (served or not by this build).
/// Host-only processes pay one check for all of them (tens of ns), whatever their number.
bool onDevice(std::initializer_list<const void*> buffers);

/// Adds a space to those spaceOf() asks (first registered, first asked). The space must outlive its
/// registration; unregisterSpace() before it is destroyed.
void registerSpace(MemorySpace* space);
void unregisterSpace(MemorySpace* space);

/// Blocking copies between host memory and any space, for tools and tests (the executor never blocks so); kTimeout
/// when the device has not finished it within `limit`.
Status copyBlocking(void* dst, const void* src, size_t bytes, std::chrono::milliseconds limit = std::chrono::minutes(5));

}  // namespace megascale::memory
