// What an executor knows of the ranks it started on its host: each process (running, how it ended, stopped by
// the kernel) and its heartbeat slot, as the RankSamples the fault detector reads; their environment; the
// self-check run on them; the driver's log lines.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "launcher/fault_detector.h"

namespace megascale::heartbeat {
class Table;
}

namespace megascale::launcher {

class ProcessGroup;

/// Every rank of the group, with the heartbeat slot of the same index.
std::vector<RankSample> sampleRanks(const ProcessGroup& group, const heartbeat::Table& table);

/// "1, 2, 5".
std::string rankList(const std::vector<int>& ranks);

/// Where this host's ranks sit in the job.
struct HostRanks {
  int nproc = 1;
  int world_size = 1;
  int rank_offset = 0;
  /// Every host of the job runs nproc ranks, host h ranks [h * nproc, (h + 1) * nproc) (a cluster job's slots).
  bool uniform_hosts = false;
};

/// The launcher's variables for the rank at `local`: the unique id (its job id + job_suffix), rank, sizes; and
/// MEGASCALE_HOST_BLOCK (nproc) where the placement is known to be blocks of nproc (uniform hosts, or one host),
/// so communicators know which ranks share a host at creation, with no exchange (unless the user set it).
std::map<std::string, std::string> rankEnvironment(const UniqueId& id, const std::string& job_suffix,
                                                   const HostRanks& ranks, int local);

/// One line of the driver's log, ISO-timestamped: "megascale-run: [2026-11-27T01:02:03.456Z] text".
void logLine(std::FILE* log, const char* format, ...) __attribute__((format(printf, 2, 3)));

/// megascale-selfcheck's exit status when every check was right but a rank or link was much slower than its peers.
constexpr int kExitSlow = 3;

/// Runs `program` (megascale-selfcheck) on this host's `nproc` ranks as a job of their own under
/// `id.job_id`, and logs the outcome; true when every rank exits 0 (or kExitSlow: flagged, not evicted) within
/// `timeout`.
bool selfCheckPasses(const std::string& program, const UniqueId& id, int nproc, std::chrono::milliseconds timeout,
                     std::FILE* log);

}  // namespace megascale::launcher
