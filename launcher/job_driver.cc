#include "launcher/job_driver.h"

#include <signal.h>
#include <sys/time.h>

#include <cstdarg>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>

#include "collectives/schedule.h"
#include "common/heartbeat.h"
#include "launcher/memory_checkpoints.h"
#include "launcher/process_group.h"

namespace megascale::launcher {

namespace {

double secondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The kernel's view: 'T' (stopped) or 't' (traced) in /proc/<pid>/stat.
bool processStopped(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && (text[paren + 2] == 'T' || text[paren + 2] == 't');
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

std::string rankList(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

}  // namespace

struct JobDriver::Attempt {
  int number = 0;
  heartbeat::Table* table = nullptr;
  std::unique_ptr<ProcessGroup> group;
  std::optional<Clock::time_point> fault_detected;  // of the fault that caused this attempt
  std::optional<Clock::time_point> detected_at;     // of the fault that ended it
  bool recovered = false;
};

JobDriver::JobDriver(DriverOptions options, std::FILE* log) : options_(std::move(options)), log_(log) {}

JobDriver::~JobDriver() = default;

void JobDriver::logLine(const char* format, ...) {
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
  std::fprintf(log_, "megascale-run: [%s.%03dZ] %s\n", stamp, static_cast<int>(tv.tv_usec / 1000), text);
  std::fflush(log_);
}

std::vector<RankSample> JobDriver::sample(Attempt& attempt) const {
  std::vector<RankSample> samples;
  const auto& ranks = attempt.group->ranks();
  for (size_t i = 0; i < ranks.size(); ++i) {
    const heartbeat::Slot& slot = attempt.table->slot(static_cast<int>(i));
    RankSample s;
    s.rank = ranks[i].rank;
    s.running = !ranks[i].exited;
    s.wait_status = ranks[i].wait_status;
    s.stopped = s.running && processStopped(ranks[i].pid);
    const uint64_t beats = slot.beats.load(std::memory_order_acquire);
    const uint64_t issued = slot.ops_issued.load(std::memory_order_acquire);
    const uint64_t completed = slot.ops_completed.load(std::memory_order_acquire);
    s.reported = beats > 0;  // in its steady loop: start-up (loading, measuring, restoring) may take long
    s.progress = beats + completed;
    s.in_collective = issued > completed;
    s.transport_errors = slot.transport_errors.load(std::memory_order_relaxed);
    s.where = describeReport(slot);
    samples.push_back(std::move(s));
  }
  return samples;
}

DriverResult JobDriver::run(volatile int* forward_signal) {
  heartbeat::Table table(options_.nproc);
  // Checkpoints in host memory only help a job that restarts.
  if (options_.max_restarts > 0) memory_ = std::make_unique<MemoryCheckpoints>(options_.id.job_id);
  DriverResult result;
  std::optional<Clock::time_point> fault_detected;
  for (int number = 0;; ++number) {
    Attempt attempt;
    attempt.number = number;
    attempt.table = &table;
    attempt.fault_detected = fault_detected;
    table.clear();
    const Ending ending = runAttempt(attempt, forward_signal, result);
    if (ending != Ending::kFault) return result;
    if (number >= options_.max_restarts) {
      if (options_.max_restarts > 0) {
        logLine("giving up: %d restart(s) used of --max-restarts %d", number, options_.max_restarts);
      }
      return result;
    }
    if (!options_.self_check_program.empty() && !selfCheckPasses(number)) {
      // One host and no spare to move to: the job cannot go on here.
      logLine("evicting this host: it failed its self-check and there is no spare host; stopping the job");
      result.summary += "; this host then failed its self-check";
      return result;
    }
    fault_detected = attempt.detected_at;
    result.restarts = number + 1;
    logLine("restart %d of %d: starting all %d ranks again; host memory holds %s", number + 1, options_.max_restarts,
            options_.nproc, memory_->describe().c_str());
  }
}

std::map<std::string, std::string> JobDriver::rankEnvironment(const std::string& job_suffix, int local) const {
  UniqueId id = options_.id;
  id.job_id += job_suffix;
  return {{"MEGASCALE_UNIQUE_ID", id.serialize()},
          {"MEGASCALE_RANK", std::to_string(options_.rank_offset + local)},
          {"MEGASCALE_WORLD_SIZE", std::to_string(options_.world_size)},
          {"MEGASCALE_LOCAL_RANK", std::to_string(local)},
          {"MEGASCALE_LOCAL_SIZE", std::to_string(options_.nproc)}};
}

bool JobDriver::selfCheckPasses(int number) {
  const auto start = Clock::now();
  ProcessGroup group;
  for (int local = 0; local < options_.nproc; ++local) {
    group.spawn(options_.rank_offset + local, {options_.self_check_program},
                rankEnvironment(".selfcheck" + std::to_string(number), local));
  }
  const auto deadline = start + options_.self_check_timeout;
  bool passed = true;
  while (group.alive() > 0 && Clock::now() < deadline) {
    for (size_t i : group.pump(std::chrono::milliseconds(20))) passed = passed && !failed(group.ranks()[i].wait_status);
  }
  const bool timed_out = group.alive() > 0;
  group.stop(std::chrono::milliseconds(0));
  passed = passed && !timed_out;
  logLine("self-check on this host's %d ranks: %s in %.2f s", options_.nproc,
          passed      ? "passed"
          : timed_out ? "did not finish (a hang counts as a failure)"
                      : "FAILED (its verdict is above)",
          secondsBetween(start, Clock::now()));
  return passed;
}

JobDriver::Ending JobDriver::runAttempt(Attempt& attempt, volatile int* forward_signal, DriverResult& result) {
  // A restart runs in a fresh key space of the store.
  const std::string job_suffix = attempt.number > 0 ? "." + std::to_string(attempt.number) : "";
  attempt.group = std::make_unique<ProcessGroup>();
  ProcessGroup& group = *attempt.group;
  for (int local = 0; local < options_.nproc; ++local) {
    std::map<std::string, std::string> env = rankEnvironment(job_suffix, local);
    env["MEGASCALE_HEARTBEAT"] = attempt.table->environmentValue(local);
    env["MEGASCALE_RESTART"] = std::to_string(attempt.number);
    if (memory_ != nullptr) env["MEGASCALE_MEMORY_CHECKPOINTS"] = memory_->path();
    group.spawn(options_.rank_offset + local, options_.program, env);
  }
  FaultDetector detector(options_.hang_timeout, options_.heartbeat);
  const auto poll_period = std::min(options_.heartbeat, std::chrono::milliseconds(20));
  auto next_sample = Clock::now();
  while (true) {
    const std::vector<size_t> ended = group.pump(poll_period);
    const int sig = *forward_signal;
    if (sig != 0) {
      *forward_signal = 0;
      group.signalAll(sig);
      result.exit_code = 128 + sig;
      result.summary = std::string("received signal ") + strsignal(sig) + "; forwarded it to all ranks";
      // The ranks decide how to end; those still running after the grace period are killed.
      const auto deadline = Clock::now() + options_.grace;
      while (group.alive() > 0 && Clock::now() < deadline) group.pump(std::chrono::milliseconds(10));
      group.stop(std::chrono::milliseconds(0));
      return Ending::kSignal;
    }
    const auto now = Clock::now();
    if (ended.empty() && now < next_sample) continue;
    next_sample = now + options_.heartbeat;
    const std::vector<RankSample> samples = sample(attempt);
    if (std::optional<Fault> fault = detector.observe(now, samples)) {
      attempt.detected_at = now;
      const RankSample* first = nullptr;
      for (const RankSample& s : samples) {
        if (s.rank == fault->ranks.front()) first = &s;
      }
      const pid_t pid = group.ranks()[static_cast<size_t>(first->rank - options_.rank_offset)].pid;
      result.exit_code = fault->exit_code;
      const std::string culprit = std::string(fault->ranks.size() > 1 ? "ranks " : "rank ") + rankList(fault->ranks) +
                                  " (pid " + std::to_string(pid) + ") " + fault->reason;
      result.summary = culprit + "; stopping the other ranks";
      logLine("detected %s: %s; rank %d's last report: %s", faultKindName(fault->kind), culprit.c_str(), first->rank,
              first->where.c_str());
      // Hung ranks cannot clean up: kill them at once; the others get the grace period.
      if (fault->kind == Fault::Kind::kHang) {
        for (int r : fault->ranks) group.signal(static_cast<size_t>(r - options_.rank_offset), SIGKILL);
      }
      const auto stop_start = Clock::now();
      group.stop(options_.grace);
      logLine("stopped all %d ranks in %.2f s", options_.nproc, secondsBetween(stop_start, Clock::now()));
      return Ending::kFault;
    }
    if (attempt.fault_detected && !attempt.recovered) {
      // Recovered once every rank has reported twice (for a trainer: completed its first step since the restart).
      bool all = true;
      for (int i = 0; i < options_.nproc; ++i) all = all && attempt.table->slot(i).beats.load() >= 2;
      if (all) {
        attempt.recovered = true;
        logLine("recovered: every rank completed a step after restart %d, %.2f s after the fault was detected",
                attempt.number, secondsBetween(*attempt.fault_detected, now));
      }
    }
    if (group.alive() == 0) {
      group.drain(std::chrono::milliseconds(1000));
      result.exit_code = 0;
      result.summary.clear();
      return Ending::kDone;
    }
  }
}

}  // namespace megascale::launcher
