// A device memory space without a device, so that every path a GPU takes runs here: its addresses are reserved
// without access, so a host copy from or to them crashes at once instead of passing unnoticed (the pages behind
// them are a memfd the engine maps elsewhere), and its engine finishes what it is given on a thread of its own, in
// an order of its choosing, some time later (as a GPU stream completes work behind the host's back). Bit for bit
// it computes what the host kernels compute: a schedule on fake device buffers must give the host result.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "collectives/memory/memory_space.h"

namespace megascale::memory {

class FakeDeviceSpace : public MemorySpace {
 public:
  /// Reserves `capacity` bytes of fake device addresses (backed only where written).
  explicit FakeDeviceSpace(size_t capacity);
  ~FakeDeviceSpace() override;
  FakeDeviceSpace(const FakeDeviceSpace&) = delete;
  FakeDeviceSpace& operator=(const FakeDeviceSpace&) = delete;

  std::string name() const override { return "fake-device"; }
  bool contains(const void* data) const override;
  void* allocate(size_t bytes) override;
  void release(void* data) override;
  void* allocateStaging(size_t bytes) override;
  void releaseStaging(void* data) override;
  Status openQueue(std::unique_ptr<EngineQueue>* queue) override;

  /// Where the engine reaches the byte at fake device address `data` (host addresses are their own).
  uint8_t* reach(const void* data) const;
  /// Items the engine has run, over all queues (tests check that device work went through it).
  uint64_t itemsRun() const;
  void countItem();
  /// A stalled engine starts nothing until it is resumed: a hung kernel, for the tests of timeouts and aborts.
  void setStalled(bool stalled) { stalled_.store(stalled); }
  bool stalled() const { return stalled_.load(); }

 private:
  int fd_ = -1;
  size_t capacity_;
  uint8_t* device_ = nullptr;  // reserved, no access
  uint8_t* view_ = nullptr;    // the same pages, for the engine
  mutable std::mutex mutex_;
  std::map<size_t, size_t> free_;  // offset -> bytes
  std::map<size_t, size_t> used_;  // offset -> bytes
  uint64_t items_run_ = 0;
  std::atomic<bool> stalled_{false};
};

/// The process's fake device (1 GiB of addresses), registered as a space at its first use.
FakeDeviceSpace& fakeDevice();

}  // namespace megascale::memory
