#include "launcher/cluster_driver.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "bootstrap/store.h"
#include "collectives/flight_dump.h"
#include "common/elapsed.h"
#include "common/status.h"
#include "launcher/executor_protocol.h"
#include "launcher/fault_detector.h"
#include "launcher/flight_watch.h"
#include "launcher/host_plan.h"
#include "launcher/link_check.h"
#include "launcher/rank_watch.h"
#include "launcher/status_table.h"
#include "topology/slurm_topology.h"

namespace megascale::launcher {

namespace {

constexpr double kSlowLinkFraction = 0.5;  // megascale-selfcheck's default too
constexpr auto kFlightRecordsWait = std::chrono::seconds(3);  // for the hosts' flight records at a stop

}  // namespace

// What the driver knows of one host's executor. Not in the anonymous namespace: State is declared in the
// header, and a member of an anonymous type there is an error (-Wsubobject-linkage) in a unity build.
struct DrivenExecutor {
  ExecutorInfo info;
  ExecutorReport report;
  Clock::time_point last_heard;  // when its report last moved
  bool reported = false;
};

struct ClusterDriver::State {
  ClusterOptions options;
  UniqueId id;
  std::FILE* log;
  std::unique_ptr<Store> store;
  std::vector<DrivenExecutor> executors;  // by executor number
  std::set<int> evicted;            // never used again
  std::vector<int> slots;
  int64_t messages = 0;
  const LiveStatus* status = nullptr;  // drive()'s

  int hostSlots() const { return options.world_size / options.nproc; }

  void publish(const DriverMessage& message) {
    store->set(store_keys::message(messages + 1), encodeMessage(message));
    messages = store->add(store_keys::kMessages, 1);
  }

  void end(int exit_code, const std::string& summary) {
    DriverMessage m;
    m.kind = DriverMessage::Kind::kEnd;
    m.exit_code = exit_code;
    m.summary = summary;
    publish(m);
  }

  // "host h2 (executor 3)".
  std::string host(int executor) const {
    return "host " + executors[static_cast<size_t>(executor)].info.host + " (executor " + std::to_string(executor) +
           ")";
  }
  std::string hostOfRank(int rank) const { return host(slots[static_cast<size_t>(rank / options.nproc)]); }

  // Reads new executors' infos and every executor's report; a report that moved is news of the executor.
  void refresh() {
    store->add(store_keys::kDriverBeat, 1);
    const int64_t joined = store->add(store_keys::kJoined, 0);
    std::vector<std::string> keys;
    for (int64_t k = static_cast<int64_t>(executors.size()); k < joined; ++k) keys.push_back(store_keys::info(static_cast<int>(k)));
    const std::vector<std::string> infos = store->multiGet(keys, options.host_timeout);
    for (size_t i = 0; i < infos.size(); ++i) {
      DrivenExecutor e;
      e.info = decodeExecutorInfo(infos[i], keys[i]);
      e.last_heard = Clock::now();
      const int number = static_cast<int>(executors.size());
      if (e.info.nproc != options.nproc) {
        logLine(log, "refusing executor %d on host %s: it starts %d ranks, the job's hosts start %d", number,
                e.info.host.c_str(), e.info.nproc, options.nproc);
        evicted.insert(number);
      } else if (!slots.empty()) {
        logLine(log, "host %s (executor %d) joined: a spare host", e.info.host.c_str(), number);
      }
      executors.push_back(std::move(e));
    }
    keys.clear();
    for (size_t k = 0; k < executors.size(); ++k) keys.push_back(store_keys::beat(static_cast<int>(k)));
    const std::vector<std::string> beats = store->multiGet(keys, options.host_timeout);
    const auto now = Clock::now();
    for (size_t k = 0; k < beats.size(); ++k) {
      DrivenExecutor& e = executors[k];
      try {
        ExecutorReport r = decodeReport(beats[k], keys[k]);
        if (!e.reported || r.seq != e.report.seq) e.last_heard = now;
        e.report = std::move(r);
        e.reported = true;
      } catch (const Error& error) {
        if (evicted.insert(static_cast<int>(k)).second) logLine(log, "evicting %s: %s", host(static_cast<int>(k)).c_str(), error.what());
      }
    }
  }

  bool silent(int executor) const {
    return Clock::now() - executors[static_cast<size_t>(executor)].last_heard > options.host_timeout;
  }

  // Every rank of the job, as its executor last reported it for this attempt (a placeholder until it has).
  std::vector<RankSample> samples(int attempt) const {
    std::vector<RankSample> all(static_cast<size_t>(options.world_size));
    for (size_t r = 0; r < all.size(); ++r) all[r].rank = static_cast<int>(r);
    for (int e : slots) {
      const ExecutorReport& report = executors[static_cast<size_t>(e)].report;
      if (report.attempt != attempt) continue;
      for (const RankSample& s : report.ranks) {
        if (s.rank >= 0 && s.rank < options.world_size) all[static_cast<size_t>(s.rank)] = s;
      }
    }
    return all;
  }

  void waitForExecutors() {
    const int needed = hostSlots() + options.spare_hosts;
    const auto start = Clock::now();
    while (true) {
      refresh();
      if (static_cast<int>(executors.size()) >= needed) return;
      if (Clock::now() - start > options.join_timeout) {
        throw Error(ErrorCode::kTimeout, "the job's driver: " + std::to_string(executors.size()) + " of " +
                                             std::to_string(needed) + " executors joined within " +
                                             std::to_string(options.join_timeout.count() / 1000) + " s");
      }
      std::this_thread::sleep_for(options.heartbeat);
    }
  }

  void startAttempt(int attempt, const HostPlan& plan) {
    slots = plan.slots;
    DriverMessage m;
    m.attempt = attempt;
    m.slots = plan.slots;
    m.replica_sources = plan.replica_sources;
    publish(m);
  }

  // Tells every executor to stop (and self-check); returns the executors that did not answer in time.
  std::set<int> stopAll(int attempt, const std::vector<int>& kill) {
    DriverMessage m;
    m.kind = DriverMessage::Kind::kStop;
    m.attempt = attempt;
    m.kill = kill;
    m.self_check = options.self_check;
    publish(m);
    const auto start = Clock::now();
    diagnose(attempt);
    const auto limit = options.stop_timeout + options.host_timeout +
                       (options.self_check ? options.self_check_timeout : std::chrono::milliseconds(0));
    std::set<int> waiting;
    for (size_t e = 0; e < executors.size(); ++e) {
      if (evicted.count(static_cast<int>(e)) == 0) waiting.insert(static_cast<int>(e));
    }
    const std::set<int> lost = awaitAnswers(std::move(waiting), start + limit, [&](int e) {
      const ExecutorReport& r = executors[static_cast<size_t>(e)].report;
      return r.attempt == attempt && r.state == ExecutorReport::State::kStopped;
    });
    logLine(log, "stopped the ranks of every answering host in %.2f s%s", secondsSince(start),
            lost.empty() ? "" : "; some hosts did not answer");
    return lost;
  }

  // The live status of every rank (megascale-run --status), in this host's diagnosis directory.
  void writeStatus(int attempt, const std::vector<RankSample>& samples, const std::vector<double>& stalled_s) const {
    std::vector<std::string> hosts;
    for (const RankSample& r : samples) hosts.push_back(executors[static_cast<size_t>(slots[static_cast<size_t>(r.rank / options.nproc)])].info.host);
    status->write(statusTable(id.job_id, attempt, samples, hosts, stalled_s));
  }

  // The flight records each host sends when it gets the stop (before it kills anything), merged into one verdict
  // across hosts. A host that sends none within a few seconds (lost, or cut off) is left out.
  void diagnose(int attempt) {
    std::vector<flight::RankRecord> records;
    const auto deadline = Clock::now() + kFlightRecordsWait;
    for (int e : slots) {
      if (e < 0 || silent(e)) continue;
      const std::string key = store_keys::flight(attempt, e);
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      try {
        for (flight::RankRecord& r : flight::rankRecordsFromJsonList(store->get(key, std::max(left, std::chrono::milliseconds(1))))) {
          records.push_back(std::move(r));
        }
      } catch (const Error& error) {
        logLine(log, "no flight records from %s: %s", host(e).c_str(), error.what());
      }
    }
    logDiagnosis(log, records);
    logLine(log, "flight records: restart-%d/ in each host's %s", attempt, defaultDiagnosisDirectory(id.job_id).c_str());
  }

  // Waits until each of `waiting` has answered (its report says so) or `deadline` passes; the ones that did not
  // answer. One that has stopped answering at all is not waited for.
  template <typename Answered>
  std::set<int> awaitAnswers(std::set<int> waiting, Clock::time_point deadline, Answered answered) {
    std::set<int> silent_ones;
    while (!waiting.empty() && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      refresh();
      std::erase_if(waiting, answered);
      std::erase_if(waiting, [&](int e) { return silent(e) && silent_ones.insert(e).second; });
    }
    silent_ones.insert(waiting.begin(), waiting.end());
    return silent_ones;
  }

  // Ranks fail fast when a host dies (their connections to it break), long before the host's executor has been
  // silent for the host timeout. So before a fault is named, every executor of the job must report once more:
  // one that does not within a few heartbeats is waited for until it answers (the fault stands as detected) or
  // is lost (the host is the culprit). Costs a live job one heartbeat.
  std::optional<int> quietHostLost() {
    std::map<int, uint64_t> seq_at_fault;
    for (int e : slots) seq_at_fault[e] = executors[static_cast<size_t>(e)].report.seq;
    while (true) {
      std::this_thread::sleep_for(options.heartbeat / 2);
      refresh();
      std::optional<int> waiting;
      for (int e : slots) {
        if (executors[static_cast<size_t>(e)].report.seq == seq_at_fault[e]) waiting = e;
      }
      if (!waiting) return std::nullopt;
      if (silent(*waiting)) return waiting;
    }
  }

  // Executors neither evicted nor holding a slot.
  std::vector<int> freeSpares() const {
    std::vector<int> spares;
    for (size_t e = 0; e < executors.size(); ++e) {
      const int n = static_cast<int>(e);
      if (evicted.count(n) == 0 && std::find(slots.begin(), slots.end(), n) == slots.end()) spares.push_back(n);
    }
    return spares;
  }

  // With --self-check, before a restart: every executor of the next run probes the link to the next one in slot
  // order. The executors to evict: those that did not answer, and those whose links failed both ways.
  std::set<int> checkLinks(int attempt, const std::vector<int>& ring) {
    DriverMessage m;
    m.kind = DriverMessage::Kind::kLinks;
    m.attempt = attempt;
    m.slots = ring;
    publish(m);
    const auto start = Clock::now();
    const auto answered = [&](int e) {
      const ExecutorReport& r = executors[static_cast<size_t>(e)].report;
      return r.attempt == attempt && r.link_check != ExecutorReport::Check::kNone;
    };
    // A probe takes at most the host timeout; its answer comes with the next report.
    std::set<int> evict =
        awaitAnswers(std::set<int>(ring.begin(), ring.end()), start + 2 * options.host_timeout, answered);
    for (int e : evict) logLine(log, "evicting %s: it did not answer the link check", host(e).c_str());
    std::vector<LinkProbe> probes;
    for (size_t position = 0; position < ring.size(); ++position) {
      const int e = ring[position];
      const ExecutorReport& r = executors[static_cast<size_t>(e)].report;
      if (!answered(e)) continue;
      probes.push_back({e, replicaHolder(ring, static_cast<int>(position)), r.link_check == ExecutorReport::Check::kPassed,
                        static_cast<double>(r.link_kbps) / 1e6});
    }
    const LinkVerdict verdict = judgeLinks(probes, kSlowLinkFraction);
    logLine(log, "link check of %zu hosts in %.2f s: %zu of %zu links passed, median %.3f GB/s", ring.size(),
            secondsSince(start), probes.size() - verdict.failed.size(), ring.size(), verdict.median_gbps);
    for (const LinkProbe& p : verdict.slow) {
      logLine(log, "link from %s to %s at %.3f GB/s, below half the median: flagged SLOW", host(p.from).c_str(),
              host(p.to).c_str(), p.gbps);
    }
    for (const LinkProbe& p : verdict.failed) {
      logLine(log, "link from %s to %s FAILED its check", host(p.from).c_str(), host(p.to).c_str());
    }
    for (int e : verdict.evict) {
      if (evict.insert(e).second) logLine(log, "evicting %s: its links failed both ways", host(e).c_str());
    }
    return evict;
  }

  // The ranks of an executor that stopped answering, as a fault.
  Fault hostLost(int executor) const {
    const int slot = static_cast<int>(std::find(slots.begin(), slots.end(), executor) - slots.begin());
    Fault fault{Fault::Kind::kHostLost, {}, "", 1};
    for (int r = slot * options.nproc; r < (slot + 1) * options.nproc; ++r) fault.ranks.push_back(r);
    char text[256];
    std::snprintf(text, sizeof(text), "whose executor stopped answering %.1f s ago",
                  secondsSince(executors[static_cast<size_t>(executor)].last_heard));
    fault.reason = text;
    return fault;
  }
};

ClusterDriver::ClusterDriver(ClusterOptions options, UniqueId id, std::FILE* log) : state_(std::make_unique<State>()) {
  state_->options = options;
  state_->id = std::move(id);
  state_->log = log;
  thread_ = std::thread([this] { run(); });
}

ClusterDriver::~ClusterDriver() { thread_.join(); }

bool ClusterDriver::finished(std::chrono::milliseconds limit) {
  std::unique_lock<std::mutex> lock(mutex_);
  return ended_.wait_for(lock, limit, [&] { return finished_; });
}

void ClusterDriver::run() {
  drive();
  std::lock_guard<std::mutex> lock(mutex_);
  finished_ = true;
  ended_.notify_all();
}

void ClusterDriver::drive() {
  State& s = *state_;
  const ClusterOptions& o = s.options;
  LiveStatus status(defaultDiagnosisDirectory(s.id.job_id));
  s.status = &status;
  try {
    s.store = connectStore(s.id, "the job's driver", o.join_timeout);
    s.waitForExecutors();
    std::vector<int> preferred;
    std::vector<std::string> hosts;
    for (const DrivenExecutor& e : s.executors) {
      preferred.push_back(e.info.preferred_slot);
      hosts.push_back(e.info.host);
    }
    std::vector<int> fill_order;
    if (!o.topology_file.empty()) {
      fill_order = topologyFillOrder(topology::loadSlurmTopology(o.topology_file), hosts);
      logLine(s.log, "placing hosts in the switch tree's order (%s)", o.topology_file.c_str());
    }
    HostPlan plan = firstPlan(s.hostSlots(), preferred, fill_order);
    if (!plan.problem.empty()) throw Error(ErrorCode::kInvalidArgument, "the job's driver: " + plan.problem);
    std::string layout;
    for (size_t slot = 0; slot < plan.slots.size(); ++slot) {
      layout += (layout.empty() ? "" : ", ") + std::string("ranks ") + std::to_string(slot * o.nproc) + "-" +
                std::to_string((slot + 1) * o.nproc - 1) + " on " + s.host(plan.slots[slot]);
    }
    logLine(s.log, "driving the job: %zu executors joined; %s; %zu spare host(s)", s.executors.size(),
            layout.c_str(), s.executors.size() - plan.slots.size());
    s.startAttempt(0, plan);
    std::optional<Clock::time_point> fault_detected;
    for (int attempt = 0;; ++attempt) {
      FaultDetector detector(o.hang_timeout, o.heartbeat, o.stopped_timeout);
      bool recovered = !fault_detected.has_value();
      std::optional<Fault> fault;
      while (!fault) {
        std::this_thread::sleep_for(o.heartbeat);
        s.refresh();
        bool all_done = true;
        for (int e : s.slots) {
          const ExecutorReport& r = s.executors[static_cast<size_t>(e)].report;
          if (r.state == ExecutorReport::State::kSignal) {
            logLine(s.log, "%s received signal %d: ending the job", s.host(e).c_str(), r.signal);
            s.end(128 + r.signal, s.host(e) + " received signal " + std::to_string(r.signal));
            return;
          }
          all_done = all_done && r.attempt == attempt && r.state == ExecutorReport::State::kDone;
          if (s.silent(e) || s.evicted.count(e) > 0) {
            fault = s.hostLost(e);
            break;
          }
        }
        if (all_done) {
          logLine(s.log, "the job finished: every rank exited 0");
          s.end(0, "");
          return;
        }
        const std::vector<RankSample> samples = s.samples(attempt);
        const auto now = Clock::now();
        if (!fault) fault = detector.observe(now, samples);
        s.writeStatus(attempt, samples, detector.stalledSeconds(now));
        if (!fault && !recovered) {
          recovered = std::all_of(samples.begin(), samples.end(), [](const RankSample& r) { return r.beats >= 2; });
          if (recovered) {
            logLine(s.log, "recovered: every rank completed a step after restart %d, %.2f s after the fault was detected",
                    attempt, secondsSince(*fault_detected));
          }
        }
      }
      if (fault->kind != Fault::Kind::kHostLost) {
        if (std::optional<int> lost = s.quietHostLost()) {
          fault = s.hostLost(*lost);
        } else if (fault->kind == Fault::Kind::kExited) {
          // Every host has reported since: a rank that a signal killed on a host whose report came later is the
          // culprit, not the peer that failed of it and was reported first.
          std::optional<Fault> again = detector.observe(Clock::now(), s.samples(attempt));
          if (again && again->kind == Fault::Kind::kExited) fault = again;
        }
      }
      fault_detected = Clock::now();
      const int first = fault->ranks.front();
      const std::string culprit = std::string(fault->ranks.size() > 1 ? "ranks " : "rank ") + rankList(fault->ranks) +
                                  " (" + s.hostOfRank(first) + ") " + fault->reason;
      logLine(s.log, "detected %s: %s; rank %d's last report: %s", faultKindName(fault->kind), culprit.c_str(), first,
              s.samples(attempt)[static_cast<size_t>(first)].where.c_str());
      std::vector<int> kill;
      if (fault->kind == Fault::Kind::kHang) kill = fault->ranks;
      std::set<int> lost = s.stopAll(attempt, kill);
      std::set<int> failed;
      for (size_t e = 0; e < s.executors.size(); ++e) {
        const ExecutorReport& r = s.executors[e].report;
        if (lost.count(static_cast<int>(e)) == 0 && r.attempt == attempt && r.self_check == ExecutorReport::Check::kFailed) {
          failed.insert(static_cast<int>(e));
        }
      }
      for (int e : lost) logLine(s.log, "evicting %s: it did not answer the stop", s.host(e).c_str());
      for (int e : failed) logLine(s.log, "evicting %s: it failed its self-check", s.host(e).c_str());
      s.evicted.insert(lost.begin(), lost.end());
      s.evicted.insert(failed.begin(), failed.end());
      if (attempt >= o.max_restarts) {
        logLine(s.log, "giving up: %d restart(s) used of --max-restarts %d", attempt, o.max_restarts);
        s.end(fault->exit_code, culprit);
        return;
      }
      plan = replan(s.slots, s.evicted, s.freeSpares(), o.nproc);
      if (plan.problem.empty() && o.self_check && plan.slots.size() >= 2) {
        const std::set<int> bad_links = s.checkLinks(attempt, plan.slots);
        if (!bad_links.empty()) {
          s.evicted.insert(bad_links.begin(), bad_links.end());
          plan = replan(s.slots, s.evicted, s.freeSpares(), o.nproc);
        }
      }
      if (!plan.problem.empty()) {
        logLine(s.log, "cannot restart: %s; stopping the job", plan.problem.c_str());
        s.end(fault->exit_code, culprit + "; then " + plan.problem);
        return;
      }
      for (const std::string& change : plan.changes) logLine(s.log, "%s", change.c_str());
      logLine(s.log, "restart %d of %d: starting all %d ranks again on %zu hosts", attempt + 1, o.max_restarts,
              o.world_size, plan.slots.size());
      s.startAttempt(attempt + 1, plan);
    }
  } catch (const std::exception& e) {
    logLine(s.log, "the job's driver failed: %s; ending the job", e.what());
    try {
      if (s.store) s.end(1, std::string("the job's driver failed: ") + e.what());
    } catch (const std::exception&) {
      // The executors notice the driver's silence and stop their ranks themselves.
    }
  }
}

}  // namespace megascale::launcher
