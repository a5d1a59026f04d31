// The driver's eyes: from samples of every rank (its process and its heartbeat slot), the first fault.
// Pure logic over the samples and the time they were taken, so every decision is unit-tested without
// processes (tests/launcher/fault_detector_test.cc).
//
// - A rank that ends with anything but status 0 is a fault at once; among several in one sample, one
//   killed by a signal is named first (the others most likely failed because it died).
// - A rank whose transport reports errors (its peers or links failed) is a fault, one sampling period later
//   (the `tolerance`) unless a rank's end explains it meanwhile.
// - A hang: a rank that has sent a heartbeat (it is in its steady loop; start-up may take long), or that is
//   stopped (SIGSTOP), and has made no progress (no heartbeat, no finished operation) for the hang timeout. It is named
//   when it is stopped (SIGSTOP), or when it is outside any collective while another rank waits in one. When every rank
//   stalls, the ones that stalled first are named.
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
  bool stopped = false;        // the kernel says stopped (SIGSTOP) or traced
  bool reported = false;       // it has sent a heartbeat (mscHeartbeat): hangs are watched from then on
  uint64_t progress = 0;       // heartbeats + finished operations: moves while the rank makes progress
  bool in_collective = false;  // issued operations that have not finished
  uint64_t transport_errors = 0;
  uint64_t beats = 0;  // heartbeats sent: 2 means a restarted trainer completed its first step
  std::string where;  // "step 12 forward, all_reduce #40 of dp" (for the report)
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
  /// hang_timeout 0: hangs are not detected. tolerance: how far apart stall starts count as one (a sampling
  /// period).
  FaultDetector(std::chrono::milliseconds hang_timeout, std::chrono::milliseconds tolerance);

  /// Feeds one sample of every rank of the job, taken at `now`; the first fault it shows, if any.
  std::optional<Fault> observe(Clock::time_point now, const std::vector<RankSample>& ranks);

 private:
  struct Seen {
    uint64_t progress = 0;
    Clock::time_point since;  // when progress last moved
    uint64_t transport_errors = 0;
    bool known = false;
  };
  std::optional<Fault> exited(const std::vector<RankSample>& ranks) const;
  std::optional<Fault> transportErrors(Clock::time_point now, const std::vector<RankSample>& ranks);
  std::optional<Fault> hang(Clock::time_point now, const std::vector<RankSample>& ranks) const;

  std::chrono::milliseconds hang_timeout_;
  std::chrono::milliseconds tolerance_;
  std::vector<Seen> seen_;  // by index in the samples
  Fault errors_{Fault::Kind::kTransportErrors, {}, "", 1};  // new transport errors, not reported yet
  Clock::time_point errors_since_;
};

}  // namespace megascale::launcher
