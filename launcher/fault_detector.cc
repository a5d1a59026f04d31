#include "launcher/fault_detector.h"

#include <sys/wait.h>

#include <algorithm>

#include "common/number_text.h"
#include "launcher/process_group.h"

namespace megascale::launcher {

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

const char* faultKindName(Fault::Kind kind) {
  switch (kind) {
    case Fault::Kind::kExited:
      return "rank ended";
    case Fault::Kind::kHang:
      return "hang";
    case Fault::Kind::kTransportErrors:
      return "transport errors";
    case Fault::Kind::kHostLost:
      return "lost host";
  }
  return "fault";
}

FaultDetector::FaultDetector(std::chrono::milliseconds hang_timeout, std::chrono::milliseconds tolerance,
                             std::chrono::milliseconds stopped_timeout)
    : hang_timeout_(hang_timeout),
      tolerance_(tolerance),
      stopped_timeout_(stopped_timeout.count() > 0 ? std::min(stopped_timeout, hang_timeout) : hang_timeout) {}

std::optional<Fault> FaultDetector::observe(Clock::time_point now, const std::vector<RankSample>& ranks) {
  seen_.resize(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    Seen& s = seen_[i];
    if (!s.known || ranks[i].progress != s.progress) {
      s.progress = ranks[i].progress;
      s.since = now;
      s.known = true;
    }
    if (!ranks[i].stopped || !ranks[i].running) {
      s.stopped_since.reset();
    } else if (!s.stopped_since) {
      s.stopped_since = now;
    }
  }
  if (auto fault = exited(now, ranks)) return fault;
  if (auto fault = transportErrors(now, ranks)) return fault;
  return hang(now, ranks);
}

std::vector<double> FaultDetector::stalledSeconds(Clock::time_point now) const {
  std::vector<double> stalled;
  for (const Seen& s : seen_) stalled.push_back(s.known ? seconds(now - s.since) : -1);
  return stalled;
}

std::optional<Fault> FaultDetector::exited(Clock::time_point now, const std::vector<RankSample>& ranks) {
  const RankSample* first = nullptr;
  for (const RankSample& r : ranks) {
    if (r.running || !failed(r.wait_status)) continue;
    const bool signaled = WIFSIGNALED(r.wait_status);
    if (first == nullptr || (signaled && !WIFSIGNALED(first->wait_status))) first = &r;
  }
  if (first == nullptr) return std::nullopt;
  const int status = first->wait_status;
  const bool cause_may_come = std::any_of(ranks.begin(), ranks.end(), [](const RankSample& r) { return r.running; });
  if (!WIFSIGNALED(status) && cause_may_come) {
    if (!failed_exit_since_) failed_exit_since_ = now;
    if (now - *failed_exit_since_ < tolerance_) return std::nullopt;
  }
  return Fault{Fault::Kind::kExited,
               {first->rank},
               describeWaitStatus(status),
               WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

std::optional<Fault> FaultDetector::transportErrors(Clock::time_point now, const std::vector<RankSample>& ranks) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i].transport_errors <= seen_[i].transport_errors) continue;
    if (!errors_.ranks.empty() && std::find(errors_.ranks.begin(), errors_.ranks.end(), ranks[i].rank) != errors_.ranks.end()) {
      continue;
    }
    if (errors_.ranks.empty()) {
      errors_since_ = now;
      errors_.reason = "its transport failed " + std::to_string(ranks[i].transport_errors) +
                       " operation(s) (a peer or link failed)";
    }
    errors_.ranks.push_back(ranks[i].rank);
  }
  // A peer's socket closes before the dead peer can be reaped: its survivors' errors wait one sampling period
  // for the death that caused them, which exited() then names instead.
  if (errors_.ranks.empty() || now - errors_since_ < tolerance_) return std::nullopt;
  Fault fault = errors_;
  std::sort(fault.ranks.begin(), fault.ranks.end());
  errors_ = Fault{Fault::Kind::kTransportErrors, {}, "", 1};
  for (size_t i = 0; i < ranks.size(); ++i) seen_[i].transport_errors = ranks[i].transport_errors;
  return fault;
}

std::optional<Fault> FaultDetector::hang(Clock::time_point now, const std::vector<RankSample>& ranks) const {
  if (hang_timeout_.count() <= 0) return std::nullopt;
  std::vector<size_t> stalled, stopped, outside;
  bool someone_waits = false, all_stalled = true;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankSample& r = ranks[i];
    // Start-up may take long (loading, measuring, restoring): watched from the first heartbeat, except a rank
    // the kernel says is stopped, which makes no progress whatever it was doing.
    if (!r.running || (!r.reported && !r.stopped)) continue;
    const bool stall_long = now - seen_[i].since >= hang_timeout_;
    const bool stopped_long = r.stopped && (stall_long || now - *seen_[i].stopped_since >= stopped_timeout_);
    if (stopped_long) stopped.push_back(i);
    const bool stall = stopped_long || stall_long;
    if (!stall) {
      all_stalled = false;
      someone_waits = someone_waits || r.in_collective;
      continue;
    }
    stalled.push_back(i);
    if (!r.in_collective) outside.push_back(i);
    someone_waits = someone_waits || r.in_collective;
  }
  if (stalled.empty()) return std::nullopt;
  const auto fault = [&](const std::vector<size_t>& which, const std::string& why, std::chrono::milliseconds timeout,
                         const char* timeout_name) {
    Fault f{Fault::Kind::kHang, {}, "", 1};
    double longest = 0;
    for (size_t i : which) {
      f.ranks.push_back(ranks[i].rank);
      longest = std::max(longest, seconds(now - seen_[i].since));
    }
    f.reason = why + ": no progress for " + twoDecimals(longest) + " s (" + timeout_name + " " + twoDecimals(seconds(timeout)) + " s)";
    return std::optional<Fault>(f);
  };
  if (!stopped.empty()) return fault(stopped, "is stopped by a signal", stopped_timeout_, "stopped timeout");
  if (!outside.empty() && someone_waits) {
    return fault(outside, "is outside any collective while others wait in one", hang_timeout_, "hang timeout");
  }
  if (!all_stalled) return std::nullopt;
  // Everyone stalled: the ranks that stopped moving first held the others up.
  Clock::time_point first = now;
  for (size_t i : stalled) first = std::min(first, seen_[i].since);
  std::vector<size_t> earliest;
  for (size_t i : stalled) {
    if (seen_[i].since - first <= tolerance_) earliest.push_back(i);
  }
  return fault(earliest,
               earliest.size() == stalled.size() ? "and every other rank stalled together"
                                                 : "stalled first, and then every other rank",
               hang_timeout_, "hang timeout");
}

}  // namespace megascale::launcher
