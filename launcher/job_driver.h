// The job driver of megascale-run: starts this host's ranks, watches them (their processes and heartbeats,
// common/heartbeat.h), and on a fault decides: stop every rank (no rank stays in a collective), then restart
// them all (the program resumes from its latest checkpoint) while restarts remain, else stop the job with a
// report. One log line per decision: what, which rank, why, how long it took.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "launcher/fault_detector.h"

namespace megascale::launcher {

class FlightWatch;
class MemoryCheckpoints;

struct DriverOptions {
  int nproc = 1;
  int world_size = 1;
  int rank_offset = 0;
  std::vector<std::string> program;
  UniqueId id;                            // a restart runs under the job id + ".<restart>"
  std::chrono::milliseconds grace{3000};  // after SIGTERM, before SIGKILL
  int max_restarts = 0;
  std::chrono::milliseconds heartbeat{500};   // how often the ranks' reports are sampled
  std::chrono::milliseconds hang_timeout{0};  // 0: hangs are not detected
  std::chrono::milliseconds stopped_timeout{0};  // a rank stopped by a signal hangs after this (0: hang_timeout)
  std::string self_check_program;             // after a fault, run this on the host's ranks (empty: none)
  std::chrono::milliseconds self_check_timeout{120000};
  std::string diagnosis_dir;  // flight records and status (empty: defaultDiagnosisDirectory(id.job_id))
};

struct DriverResult {
  int exit_code = 0;    // 0 when every rank of the last run exited 0
  std::string summary;  // the fault that ended the job
  int restarts = 0;
};

class JobDriver {
 public:
  JobDriver(DriverOptions options, std::FILE* log);
  ~JobDriver();
  /// Runs the job to its end. A signal in `*forward_signal` is passed to every rank and ends the job.
  DriverResult run(volatile int* forward_signal);

 private:
  enum class Ending { kDone, kFault, kSignal };
  struct Attempt;
  Ending runAttempt(Attempt& attempt, volatile int* forward_signal, DriverResult& result);
  void diagnose(const FlightWatch& flights, const std::vector<RankSample>& samples, const std::vector<double>& stalled_s,
                int attempt, const char* fault);

  DriverOptions options_;
  std::FILE* log_;
  std::unique_ptr<MemoryCheckpoints> memory_;  // with --max-restarts: stage-1 checkpoints, kept across restarts
};

}  // namespace megascale::launcher
