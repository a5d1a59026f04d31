// Where a *_perf tool's buffers live (--memory, as nccl-tests users expect device buffers): host (plain memory),
// pinned (page-locked host memory of the rank's GPU), device (the rank's GPU: local rank modulo the GPUs the
// driver sees), fake-device (the fake device of collectives/memory: every device path, without a GPU). The
// tool fills and checks host copies; buffers elsewhere are copied in before and out after, never timed.
#pragma once

#include <cstddef>
#include <string>

#include "collectives/memory/memory_space.h"

namespace megascale::bench {

class BenchMemory {
 public:
  enum Kind { kHost, kPinned, kDevice, kFakeDevice };
  static bool parse(const std::string& text, Kind* kind);
  /// The memory of `kind` for the rank of local rank `local_rank`; false with *why where it is unavailable.
  static bool open(Kind kind, int local_rank, BenchMemory* memory, std::string* why);

  /// Whether buffers are plain host memory the tool uses as they are (no copies in and out).
  bool isHost() const { return kind_ == kHost; }
  void* allocate(size_t bytes) const;
  void release(void* data) const;
  /// "host", "pinned (cuda:0)", "device (cuda:1)", "device (fake-device)": the header's line.
  std::string describe() const;

 private:
  Kind kind_ = kHost;
  memory::MemorySpace* space_ = nullptr;
};

}  // namespace megascale::bench
