// Runs one rank's schedule over a communicator's peer links. Any schedule, any transport. The schedule's
// meaning is that of its phases in order (each phase's sends and receives concurrently, then its local copies
// and reductions); the executor runs it as data flow over a window of phases: a step starts as soon as the
// earlier steps whose bytes it overlaps are done, transfers on one comm keep program order, and host steps
// (the node engine's collectives) go to the host stage in program order.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/host_stage.h"
#include "collectives/peer_links.h"
#include "collectives/schedule.h"
#include "megascale/megascale.h"

namespace megascale {

/// Scratch memory kept between operations of one communicator: a fresh allocation per collective costs a
/// page fault per 4 KiB (in a VM, 4 ranks x 48 MiB of first touches took longer than the data movement).
struct ScratchCache {
  std::unique_ptr<uint8_t[]> bytes;
  size_t size = 0;
  /// Scratch of at least `size` bytes: the cached block, grown when too small. Larger than kMaxCachedBytes is
  /// allocated for the one operation (into `owned`). Null when memory is short.
  uint8_t* get(size_t size, std::unique_ptr<uint8_t[]>& owned);
  static constexpr size_t kMaxCachedBytes = size_t{256} << 20;
};

struct ExecutionContext {
  int rank = 0;
  std::string operation;  // "all_reduce #12 (float sum, 1048576 elements)" for messages
  uint32_t tag = 0;       // same on every rank for the same operation; a mismatch means ranks diverged
  std::chrono::milliseconds timeout{300000};  // no progress for this long is an error
  const std::atomic<bool>* aborted = nullptr;
  int nranks_for_average = 1;
  ScratchCache* scratch = nullptr;  // the communicator's; null allocates per operation
  HostStage* host = nullptr;        // runs the schedule's host steps (Step::kHost*); null when none serves
};

/// buffers[kInput], [kOutput] and [kUser+i] are the caller's; [kScratch] is allocated as needed.
Status executeSchedule(const Schedule& schedule, std::vector<void*> buffers, mscDataType_t type, mscRedOp_t op,
                       PeerLinks& links, const ExecutionContext& ctx);

}  // namespace megascale
