// The node engine as a stage of a schedule. A hierarchical schedule's host-local collectives (Step::kHost*) go
// to the engine of this rank's host, which moves each byte once between the host's processes (cross-memory
// attach) instead of through a transport's staging buffers. An engine call blocks until every rank of the host
// has taken part, so the stage runs calls on a thread of its own, one at a time in the order started, while the
// executor keeps the network transfers moving: one chunk's host stage overlaps another chunk's network stage.
// A schedule that is a single host step (a one-host communicator's collective) has nothing to overlap: run as
// a LoneHostStep (executor.h), the thread running it calls the engine itself (runHere), and a small one may
// start on the caller's thread (begin).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include "collectives/node/node_engine.h"
#include "collectives/schedule.h"
#include "common/status.h"

namespace megascale {

class HostStage {
 public:
  /// `engine` serves the host's ranks `host_ranks` (the communicator's ranks, in local order).
  HostStage(std::unique_ptr<node::NodeEngine> engine, std::vector<int> host_ranks, int local);
  ~HostStage();
  HostStage(const HostStage&) = delete;
  HostStage& operator=(const HostStage&) = delete;

  int local() const { return local_; }
  int size() const { return static_cast<int>(host_ranks_.size()); }
  /// "ranks 4, 5, 6, 7", for messages.
  std::string describeHost() const;

  /// The engine call of host step `step` (Step::kHost*) whose slices `a` and `dst` lie at `a_at` and `dst_at`,
  /// tagged `tag`; errors name the operation with `describe`. A schedule divides an average once at its end
  /// (Schedule::result), so the host's part of mscAvg is a sum. kInternal when the slices do not fit the host.
  Status callFor(const Step& step, const void* a_at, void* dst_at, mscDataType_t type, mscRedOp_t op, uint32_t tag,
                 std::function<std::string()> describe, node::NodeCall* call) const;

  /// Queues a call and returns its ticket. Its buffers must stay valid until done(ticket) or stopAndWait().
  /// call.aborted is replaced by the stage's own flag. The stage's thread starts with the first call.
  uint64_t start(node::NodeCall call);
  /// Runs a call on this thread while the stage is idle (nothing started and not done).
  Status runHere(node::NodeCall call);
  /// On the caller's thread while the stage is idle: starts the call and finishes it if the host's ranks keep up
  /// within the engine's spin budget (*done). Otherwise the call is held begun: the next call, started or run
  /// here with the same arguments, finishes it.
  Status begin(node::NodeCall call, bool* done);
  /// Whether call `ticket` has finished. A failed call stops the stage: *status holds the failure, and every
  /// later call fails with it.
  bool done(uint64_t ticket, Status* status) const;
  /// After the schedule failed (or an abort): fails the running call promptly, drops the queued ones, waits
  /// until the thread holds no buffer, and tells the host's other ranks that this one broke.
  void stopAndWait();
  /// From any thread (abort): the running call fails promptly, later ones are not run.
  void cancel();

 private:
  void loop(std::stop_token stop);
  /// Runs (or, after begin, finishes) one call; a failure marks the engine failed and stops the stage.
  Status runOne(const node::NodeCall& call);
  /// An engine call on this thread: a throw becomes its status, a failure marks the engine failed (this is the
  /// thread that ran it) and stops the stage.
  template <typename Call>
  Status engineCall(const Call& call);
  void recordFailure(const Status& status);  // mutex_ held
  Status failure() const;

  std::unique_ptr<node::NodeEngine> engine_;
  const std::vector<int> host_ranks_;
  const int local_;
  std::atomic<bool> cancelled_{false};
  mutable std::mutex mutex_;
  std::condition_variable_any work_cv_;
  std::condition_variable idle_cv_;
  std::deque<node::NodeCall> queue_;
  bool running_ = false;
  bool marked_failed_ = false;
  bool begun_ = false;  // begin() left a call unfinished; the thread that runs the next call finishes it
  uint64_t started_ = 0;
  std::atomic<uint64_t> finished_{0};
  std::atomic<bool> failed_{false};
  Status failure_;  // guarded by mutex_; set before failed_
  std::jthread thread_;
};

}  // namespace megascale
