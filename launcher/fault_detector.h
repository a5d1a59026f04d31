// The driver's eyes: from samples of every rank (its process and its heartbeat slot), the first fault.
// Pure logic over the samples and the time they were taken, so every decision is unit-tested without
// processes (tests/launcher/fault_detector_test.cc).
//
// - A rank killed by a signal is a fault at once. A rank that exits with a failing status is one a sampling
//   period later (the `tolerance`): a peer that failed because another rank died, or that gave up on an error
//   the job shares, often exits first; the death or the rank that names the cause comes meanwhile (unless
//   no rank runs any more). Among
//   several ended ranks, one killed by a signal is named first.
// - A rank whose transport reports errors (its peers or links failed) is a fault, one sampling period later
//   (the `tolerance`) unless a rank's end explains it meanwhile.
// - A rank the kernel has stopped (SIGSTOP, SIGTSTP; not a debugger's trace stop) for the stopped timeout
//   hangs: it cannot move until someone continues it, so it need not wait out the hang timeout, which must
//   also cover a link flap that stalls every collective for seconds.
// - A hang: a rank that has sent a heartbeat (it is in its steady loop; start-up may take long) and has made no
//   progress (no heartbeat, no finished operation) for the hang timeout. It is named when it is outside any
//   collective while another rank waits in one. When every rank stalls, the ones that stalled first are named.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace megascale::launcher {

using Clock = std::chrono::steady_clock;

/// One rank as the executor sees it at one moment.
struct RankSample {
  int rank = 0;
  bool running = true;         // not yet reaped
  int wait_status = 0;         // how it ended, once !running
  bool stopped = false;        // the kernel says stopped by a signal (SIGSTOP), not traced
  bool reported = false;       // it has sent a heartbeat (mscHeartbeat): hangs are watched from then on
  uint64_t progress = 0;       // heartbeats + finished operations: moves while the rank makes progress
  bool in_collective = false;  // issued operations that have not finished
  uint64_t transport_errors = 0;
  uint64_t beats = 0;  // heartbeats sent: 2 means a restarted trainer completed its first step
  std::string where;  // "step 12 forward, all_reduce #40 of dp" (for the report)
  int64_t step = -1;   // its latest heartbeat's step and phase (-1: none yet)
  std::string phase;
  // From its flight record (launcher/flight_watch.h): its coordinates, the operation it has been in longest
  // ("all_reduce #40 of dp (running)", "" none) and for how many seconds.
  std::string coordinates;
  std::string operation;
  double in_operation_s = -1;
};

struct Fault {
  enum class Kind { kExited, kHang, kTransportErrors, kHostLost };
  Kind kind;
  std::vector<int> ranks;  // the suspects, lowest first
  std::string reason;      // "was killed by signal 9 (Killed)", ...
  int exit_code = 1;       // what megascale-run exits with if it gives up on this fault
};
const char* faultKindName(Fault::Kind kind);

class FaultDetector {
 public:
  /// hang_timeout 0: hangs (stopped ranks included) are not detected. tolerance: how far apart stall starts count
  /// as one, how long failing exits and transport errors wait for their cause (a sampling period).
  /// stopped_timeout: a stopped rank hangs after this (0, or above hang_timeout: after hang_timeout).
  FaultDetector(std::chrono::milliseconds hang_timeout, std::chrono::milliseconds tolerance,
                std::chrono::milliseconds stopped_timeout = std::chrono::milliseconds(0));

  /// Feeds one sample of every rank of the job, taken at `now`; the first fault it shows, if any.
  std::optional<Fault> observe(Clock::time_point now, const std::vector<RankSample>& ranks);
  /// By sample index: seconds from the last time the rank's progress moved to `now` (-1 before its first sample).
  std::vector<double> stalledSeconds(Clock::time_point now) const;

 private:
  struct Seen {
    uint64_t progress = 0;
    Clock::time_point since;  // when progress last moved
    std::optional<Clock::time_point> stopped_since;
    uint64_t transport_errors = 0;
    bool known = false;
  };
  std::optional<Fault> exited(Clock::time_point now, const std::vector<RankSample>& ranks);
  std::optional<Fault> transportErrors(Clock::time_point now, const std::vector<RankSample>& ranks);
  std::optional<Fault> hang(Clock::time_point now, const std::vector<RankSample>& ranks) const;

  std::chrono::milliseconds hang_timeout_;
  std::chrono::milliseconds tolerance_;
  std::chrono::milliseconds stopped_timeout_;
  std::vector<Seen> seen_;  // by index in the samples
  Fault errors_{Fault::Kind::kTransportErrors, {}, "", 1};  // new transport errors, not reported yet
  Clock::time_point errors_since_;
  std::optional<Clock::time_point> failed_exit_since_;  // a rank exited with a failing status, not yet reported
};

}  // namespace megascale::launcher
