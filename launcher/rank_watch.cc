#include "launcher/rank_watch.h"

#include <sys/time.h>
#include <sys/wait.h>

#include <cstdarg>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>

#include "collectives/schedule.h"
#include "common/elapsed.h"
#include "common/heartbeat.h"
#include "launcher/process_group.h"

namespace megascale::launcher {

namespace {

// The kernel's view: 'T' (stopped by a signal) in /proc/<pid>/stat. A debugger's trace stop ('t') is left to
// the hang timeout: a person at a breakpoint is not a fault to rush.
bool processStopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'T';
}

// "step 12 forward, all_reduce #40 of dp (waiting)".
std::string describeReport(const heartbeat::Slot& slot) {
  std::string where;
  if (slot.beats.load(std::memory_order_acquire) > 0) {
    where = "step " + std::to_string(slot.step.load(std::memory_order_relaxed));
    const std::string phase = heartbeat::unpackName(slot.phase.load(std::memory_order_relaxed));
    if (!phase.empty()) where += " " + phase;
  }
  const uint32_t kind = slot.op_kind.load(std::memory_order_relaxed);
  if (kind != 0) {
    if (!where.empty()) where += ", ";
    const uint64_t issued = slot.ops_issued.load(std::memory_order_acquire);
    const uint64_t completed = slot.ops_completed.load(std::memory_order_acquire);
    where += std::string(issued > completed ? "in " : "after ") + collectiveName(static_cast<Collective>(kind - 1)) +
             " #" + std::to_string(slot.op_seq.load(std::memory_order_relaxed)) + " of " +
             heartbeat::unpackName(slot.op_group.load(std::memory_order_relaxed));
  }
  return where.empty() ? "no report yet" : where;
}

}  // namespace

std::vector<RankSample> sampleRanks(const ProcessGroup& group, const heartbeat::Table& table) {
  std::vector<RankSample> samples;
  const auto& ranks = group.ranks();
  for (size_t i = 0; i < ranks.size(); ++i) {
    const heartbeat::Slot& slot = table.slot(static_cast<int>(i));
    RankSample s;
    s.rank = ranks[i].rank;
    s.running = !ranks[i].exited;
    s.wait_status = ranks[i].wait_status;
    s.stopped = s.running && processStopped(ranks[i].pid);
    s.beats = slot.beats.load(std::memory_order_acquire);
    const uint64_t issued = slot.ops_issued.load(std::memory_order_acquire);
    const uint64_t completed = slot.ops_completed.load(std::memory_order_acquire);
    s.reported = s.beats > 0;  // in its steady loop: start-up (loading, measuring, restoring) may take long
    s.progress = s.beats + completed;
    s.in_collective = issued > completed;
    s.transport_errors = slot.transport_errors.load(std::memory_order_relaxed);
    s.where = describeReport(slot);
    if (s.beats > 0) {
      s.step = slot.step.load(std::memory_order_relaxed);
      s.phase = heartbeat::unpackName(slot.phase.load(std::memory_order_relaxed));
    }
    samples.push_back(std::move(s));
  }
  return samples;
}

std::string rankList(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

std::map<std::string, std::string> rankEnvironment(const UniqueId& id, const std::string& job_suffix,
                                                   const HostRanks& ranks, int local) {
  UniqueId scoped = id;
  scoped.job_id += job_suffix;
  std::map<std::string, std::string> env = {{"MEGASCALE_UNIQUE_ID", scoped.serialize()},
                                            {"MEGASCALE_RANK", std::to_string(ranks.rank_offset + local)},
                                            {"MEGASCALE_WORLD_SIZE", std::to_string(ranks.world_size)},
                                            {"MEGASCALE_LOCAL_RANK", std::to_string(local)},
                                            {"MEGASCALE_LOCAL_SIZE", std::to_string(ranks.nproc)}};
  const bool blocks = ranks.uniform_hosts || ranks.nproc == ranks.world_size;
  if (blocks && std::getenv("MEGASCALE_HOST_BLOCK") == nullptr) env["MEGASCALE_HOST_BLOCK"] = std::to_string(ranks.nproc);
  return env;
}

void logLine(std::FILE* log, const char* format, ...) {
  timeval tv{};
  gettimeofday(&tv, nullptr);
  tm utc{};
  gmtime_r(&tv.tv_sec, &utc);
  char stamp[40];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &utc);
  char text[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  std::fprintf(log, "megascale-run: [%s.%03dZ] %s\n", stamp, static_cast<int>(tv.tv_usec / 1000), text);
  std::fflush(log);
}

bool selfCheckPasses(const std::string& program, const UniqueId& id, int nproc, std::chrono::milliseconds timeout,
                     std::FILE* log) {
  const auto start = Clock::now();
  ProcessGroup group;
  const HostRanks alone{nproc, nproc, 0};
  for (int local = 0; local < nproc; ++local) group.spawn(local, {program}, rankEnvironment(id, "", alone, local));
  const auto deadline = start + timeout;
  bool passed = true, slow = false;
  while (group.alive() > 0 && Clock::now() < deadline) {
    for (size_t i : group.pump(std::chrono::milliseconds(20))) {
      const int status = group.ranks()[i].wait_status;
      const bool flagged = WIFEXITED(status) && WEXITSTATUS(status) == kExitSlow;
      slow = slow || flagged;
      passed = passed && (flagged || !failed(status));
    }
  }
  const bool timed_out = group.alive() > 0;
  group.stop(std::chrono::milliseconds(0));
  passed = passed && !timed_out;
  // A rank much slower than its peers is named in the verdict above; it is a straggler to look at, not a fault.
  logLine(log, "self-check on this host's %d ranks: %s in %.2f s", nproc,
          passed && slow ? "passed, a rank flagged slow (its verdict is above)"
          : passed       ? "passed"
          : timed_out    ? "did not finish (a hang counts as a failure)"
                         : "FAILED (its verdict is above)",
          secondsSince(start));
  return passed;
}

}  // namespace megascale::launcher
