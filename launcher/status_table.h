// megascale-run --status: while a job runs, its driver keeps a table of every rank in the job's diagnosis
// directory (status), replaced at every sampling period; --status prints it. Per rank: its step and phase, the
// operation it is in and for how long, how long since its progress last moved, and its transport errors.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "launcher/fault_detector.h"

namespace megascale::launcher {

/// The table, from the samples of every rank of the job (with their flight view, launcher/flight_watch.h), the
/// host of each and the seconds since each last made progress (by index; -1 unknown).
std::string statusTable(const std::string& job_id, int restart, const std::vector<RankSample>& samples,
                        const std::vector<std::string>& hosts, const std::vector<double>& stalled_s);

/// A job's status file, dir/status, for as long as its driver runs.
class LiveStatus {
 public:
  explicit LiveStatus(std::string dir) : dir_(std::move(dir)) {}
  /// The job has ended: its status goes, and its directory too when nothing else is in it (flight records of
  /// faults stay).
  ~LiveStatus();
  LiveStatus(const LiveStatus&) = delete;
  LiveStatus& operator=(const LiveStatus&) = delete;
  /// Replaces the status with `table` (atomically: a reader never sees half of it). A full disk costs the
  /// status, never the driver.
  void write(const std::string& table) const;

 private:
  std::string dir_;
};

/// megascale-run --status [JOB]: prints the status of the job (a job id or a diagnosis directory), or of every job
/// under ${TMPDIR:-/tmp}/megascale-jobs whose driver updated its status in the last 30 s. The exit status: 0
/// when one was printed, 1 when none was found.
int printStatus(const std::string& job, std::FILE* out);

}  // namespace megascale::launcher
