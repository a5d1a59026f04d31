#include "launcher/job_driver.h"

#include <signal.h>
#include <sys/time.h>

#include <cstdarg>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>
#include <sstream>

#include "common/heartbeat.h"
#include "launcher/flight_watch.h"
#include "launcher/memory_checkpoints.h"
#include "launcher/preemption.h"
#include "launcher/process_group.h"
#include "launcher/rank_watch.h"
#include "launcher/status_table.h"
#include "topology/host_record.h"

namespace megascale::launcher {

namespace {

double secondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace

struct JobDriver::Attempt {
  int number = 0;
  heartbeat::Table* table = nullptr;
  FlightWatch* flights = nullptr;
  const LiveStatus* status = nullptr;
  std::unique_ptr<ProcessGroup> group;
  std::optional<Clock::time_point> fault_detected;  // of the fault that caused this attempt
  std::optional<Clock::time_point> detected_at;     // of the fault that ended it
  bool recovered = false;
};

JobDriver::JobDriver(DriverOptions options, std::FILE* log) : options_(std::move(options)), log_(log) {}

JobDriver::~JobDriver() = default;

DriverResult JobDriver::run(volatile int* forward_signal) {
  heartbeat::Table table(options_.nproc);
  if (options_.diagnosis_dir.empty()) options_.diagnosis_dir = defaultDiagnosisDirectory(options_.id.job_id);
  FlightWatch flights(options_.nproc, options_.diagnosis_dir);
  LiveStatus status(options_.diagnosis_dir);
  // Checkpoints in host memory only help a job that restarts.
  if (options_.max_restarts > 0) memory_ = std::make_unique<MemoryCheckpoints>(options_.id.job_id);
  DriverResult result;
  std::optional<Clock::time_point> fault_detected;
  for (int number = 0;; ++number) {
    Attempt attempt;
    attempt.number = number;
    attempt.table = &table;
    attempt.flights = &flights;
    attempt.status = &status;
    attempt.fault_detected = fault_detected;
    table.clear();
    flights.clear();
    const Ending ending = runAttempt(attempt, forward_signal, result);
    if (ending != Ending::kFault) return result;
    if (number >= options_.max_restarts) {
      if (options_.max_restarts > 0) {
        logLine(log_, "giving up: %d restart(s) used of --max-restarts %d", number, options_.max_restarts);
      }
      return result;
    }
    UniqueId check_id = options_.id;
    check_id.job_id += ".selfcheck" + std::to_string(number);
    if (!options_.self_check_program.empty() &&
        !selfCheckPasses(options_.self_check_program, check_id, options_.nproc, options_.self_check_timeout, log_)) {
      // One host and no spare to move to: the job cannot go on here.
      logLine(log_, "evicting this host: it failed its self-check and there is no spare host; stopping the job");
      result.summary += "; this host then failed its self-check";
      return result;
    }
    fault_detected = attempt.detected_at;
    result.restarts = number + 1;
    logLine(log_, "restart %d of %d: starting all %d ranks again; host memory holds %s", number + 1, options_.max_restarts,
            options_.nproc, memory_->describe().c_str());
  }
}

// Before any rank is stopped: every rank's flight record as the fault left it, on disk and as a verdict.
void JobDriver::diagnose(const FlightWatch& flights, const std::vector<RankSample>& samples,
                         const std::vector<double>& stalled_s, int attempt, const char* fault) {
  const auto records = flights.read(samples, stalled_s, topology::thisHostName(), std::string("driver: ") + fault + " detected");
  logDiagnosis(log_, records);
  const std::string dir = flights.write(records, "restart-" + std::to_string(attempt));
  if (!dir.empty()) logLine(log_, "flight records of all %d ranks: %s (megascale-diagnose %s)", options_.nproc, dir.c_str(), dir.c_str());
}

JobDriver::Ending JobDriver::runAttempt(Attempt& attempt, volatile int* forward_signal, DriverResult& result) {
  // A restart runs in a fresh key space of the store.
  const std::string job_suffix = attempt.number > 0 ? "." + std::to_string(attempt.number) : "";
  attempt.group = std::make_unique<ProcessGroup>();
  ProcessGroup& group = *attempt.group;
  for (int local = 0; local < options_.nproc; ++local) {
    std::map<std::string, std::string> env =
        rankEnvironment(options_.id, job_suffix, {options_.nproc, options_.world_size, options_.rank_offset}, local);
    env["MEGASCALE_HEARTBEAT"] = attempt.table->environmentValue(local);
    env.merge(attempt.flights->environment(local));
    env["MEGASCALE_RESTART"] = std::to_string(attempt.number);
    if (memory_ != nullptr) env["MEGASCALE_MEMORY_CHECKPOINTS"] = memory_->path();
    group.spawn(options_.rank_offset + local, options_.program, env);
  }
  FaultDetector detector(options_.hang_timeout, options_.heartbeat, options_.stopped_timeout);
  const auto poll_period = std::min(options_.heartbeat, std::chrono::milliseconds(20));
  auto next_sample = Clock::now();
  while (true) {
    const std::vector<size_t> ended = group.pump(poll_period);
    const int sig = *forward_signal;
    if (sig != 0 && isPreemptionNotice(sig)) {
      *forward_signal = 0;
      askRanksToStop(group, sig, log_);  // they end as after their last step
    } else if (sig != 0) {
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
    const std::vector<RankSample> samples = sampleRanks(group, *attempt.table);
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
      logLine(log_, "detected %s: %s; rank %d's last report: %s", faultKindName(fault->kind), culprit.c_str(), first->rank,
              first->where.c_str());
      diagnose(*attempt.flights, samples, detector.stalledSeconds(now), attempt.number, faultKindName(fault->kind));
      // Hung ranks cannot clean up: kill them at once; the others get the grace period.
      if (fault->kind == Fault::Kind::kHang) {
        for (int r : fault->ranks) group.signal(static_cast<size_t>(r - options_.rank_offset), SIGKILL);
      }
      const auto stop_start = Clock::now();
      group.stop(options_.grace);
      logLine(log_, "stopped all %d ranks in %.2f s", options_.nproc, secondsBetween(stop_start, Clock::now()));
      return Ending::kFault;
    }
    std::vector<RankSample> viewed = samples;
    addFlightView(viewed, attempt.flights->read(samples, {}, "", "status"));
    attempt.status->write(statusTable(options_.id.job_id, attempt.number, viewed,
                            std::vector<std::string>(viewed.size(), topology::thisHostName()), detector.stalledSeconds(now)));
    if (attempt.fault_detected && !attempt.recovered) {
      // Recovered once every rank has reported twice (for a trainer: completed its first step since the restart).
      bool all = true;
      for (int i = 0; i < options_.nproc; ++i) all = all && attempt.table->slot(i).beats.load() >= 2;
      if (all) {
        attempt.recovered = true;
        logLine(log_, "recovered: every rank completed a step after restart %d, %.2f s after the fault was detected",
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
