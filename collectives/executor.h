// Runs one rank's schedule over a communicator's peer links. Any schedule, any transport. The schedule's
// meaning is that of its phases in order (each phase's sends and receives concurrently, then its local copies
// and reductions); the executor runs it as data flow over a window of phases: a step starts as soon as the
// earlier steps whose bytes it overlaps are done, transfers on one comm keep program order, and host steps
// (the node engine's collectives) go to the host stage in program order.
#pragma once

#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/buffer_registry.h"
#include "collectives/host_stage.h"
#include "collectives/memory/memory_space.h"
#include "collectives/memory/staging.h"
#include "collectives/peer_links.h"
#include "collectives/schedule.h"
#include "common/backoff.h"
#include "megascale/megascale.h"

namespace megascale {

/// Scratch memory kept between operations of one communicator: a fresh allocation per collective costs a
/// page fault per 4 KiB (in a VM, 4 ranks x 48 MiB of first touches took longer than the data movement).
struct ScratchCache {
  std::unique_ptr<uint8_t[]> bytes;
  size_t size = 0;
  /// The communicator's registrations: the cached block is registered with its transports while it is kept.
  BufferRegistry* registry = nullptr;
  RegisteredBlock registration;
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
  /// Driven by a thread shared with other runs (a progress engine): past the few spins it sleeps on its
  /// descriptors at once, since its yields would spin the shared thread.
  bool shared_driver = false;
  /// The flight recorder's note of whom a stalled run waits for (a rank of the group); null: none kept.
  std::atomic<int32_t>* waiting_for = nullptr;
  /// Device buffers: the communicator's queues (null: the run opens its own) and how transfers stage through
  /// host memory (the same on every rank).
  memory::QueueCache* queues = nullptr;
  memory::StagingPlan staging;
  /// The caller found every buffer to be host memory already (a communicator does once per operation): the run
  /// does not look again.
  bool host_buffers = false;
};

/// What a run that cannot move on waits for before its next advance(): its descriptors (with the rank's
/// listeners from `incoming_from` on) for at most `cap_ms`, or an idle round of the backoff. Whoever drives the
/// run fills in the descriptors' revents.
struct RunWait {
  enum Kind : uint8_t { kPoll, kIdle } kind = kIdle;
  std::vector<pollfd> fds;
  size_t incoming_from = 0;
  int cap_ms = 0;  // negative: no cap (a driver of many waits for the descriptors only)
  IdleBackoff::Pause pause{IdleBackoff::Pause::kSpin};
  /// Waits on this thread (the blocking driver).
  void block();
  /// After a kPoll: a listener moved, or the cap passed (a connection another group's thread accepted for this
  /// one waits in the hub, not on a descriptor).
  bool incomingMayHaveMoved() const;
};

/// One rank's run of a schedule, moved on by advance() without ever blocking, so that one thread can drive
/// many (a progress engine) or one thread drive one (executeSchedule). buffers[kInput], [kOutput] and
/// [kUser+i] are the caller's and must outlive the run, as must the schedule, the links and the context's
/// pointers; [kScratch] is allocated as needed.
class ScheduleRun {
 public:
  ScheduleRun(const Schedule& schedule, std::vector<void*> buffers, mscDataType_t type, mscRedOp_t op, PeerLinks& links,
              ExecutionContext ctx);
  ~ScheduleRun();
  ScheduleRun(const ScheduleRun&) = delete;
  ScheduleRun& operator=(const ScheduleRun&) = delete;

  /// Moves the run as far as it goes now. *done once it has finished, with the returned status (an error
  /// finishes it too); otherwise wait() says what it waits for.
  Status advance(bool* done);
  RunWait& wait() { return wait_; }

 private:
  struct Node;
  struct State;
  std::unique_ptr<State> state_;
  RunWait wait_;
};

/// Whether the schedule is one host step and nothing else (a one-host communicator's collective on its node
/// engine): the thread that runs it calls the engine itself.
bool isLoneHostStep(const Schedule& s);
/// The engine tag of an operation's `ordinal`-th host step (the operation's tag is its transfers').
inline uint32_t hostStepTag(uint32_t tag, uint32_t ordinal) { return tag + 1 + ordinal; }
/// A schedule that is one host step (isLoneHostStep), run without a ScheduleRun: there is nothing to overlap or
/// order, so the engine call is the whole run (a one-host communicator's small operations cost no more than the
/// engine's own). The average's division is the run's too.
struct LoneHostStep {
  const Schedule& schedule;
  const void* in;
  void* out;
  mscDataType_t type;
  mscRedOp_t op;
  uint32_t tag;
  int nranks_for_average;
  HostStage& host;
  std::function<std::string()> describe;

  /// On the caller's thread: starts it, and finishes it if the host's ranks keep up within the engine's spin
  /// budget (*done). Otherwise a run of the same schedule and tag (runToEnd, or a ScheduleRun) must come next,
  /// on any thread: it finishes the begun call.
  Status begin(bool* done) const;
  /// Runs it (or finishes what begin left) on this thread.
  Status runToEnd() const;

 private:
  Status run(bool* done) const;
};

/// Drives a run to its end on this thread.
Status runToEnd(ScheduleRun& run);

/// Runs a schedule to its end on this thread.
Status executeSchedule(const Schedule& schedule, std::vector<void*> buffers, mscDataType_t type, mscRedOp_t op,
                       PeerLinks& links, const ExecutionContext& ctx);

}  // namespace megascale
