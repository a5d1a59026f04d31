#include "launcher/host_executor.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "bootstrap/local_address.h"
#include "bootstrap/store.h"
#include "collectives/flight_dump.h"
#include "common/checkpoint_layout.h"
#include "common/elapsed.h"
#include "common/heartbeat.h"
#include "common/status.h"
#include "launcher/checkpoint_replicas.h"
#include "launcher/executor_protocol.h"
#include "launcher/flight_watch.h"
#include "launcher/host_plan.h"
#include "launcher/memory_checkpoints.h"
#include "launcher/preemption.h"
#include "launcher/process_group.h"
#include "launcher/rank_watch.h"
#include "launcher/worker_thread.h"
#include "topology/host_record.h"

namespace megascale::launcher {

namespace {

// The last operations of each group a host sends the driver: what the diagnosis reads (the operations in
// flight and the ones just before), at a few KiB per rank through the store.
constexpr size_t kFlightOpsToDriver = 16;

namespace fs = std::filesystem;

// The executor's voice in the store, in a thread of its own so that a store that does not answer (a cut link)
// never stops the executor from watching its ranks: it publishes the latest report every heartbeat and collects
// the driver's messages. The main loop judges from lastContact() whether the store is still reachable.
class Reporter {
 public:
  /// Reads the driver's messages from number `first_message` + 1 on: an executor that joins a running job as a
  /// spare has no business with the orders given before it came.
  Reporter(UniqueId id, int executor, int64_t first_message, std::chrono::milliseconds heartbeat, std::FILE* log)
      : id_(std::move(id)), executor_(executor), first_message_(first_message), heartbeat_(heartbeat), log_(log) {
    last_contact_ = last_driver_beat_ = Clock::now().time_since_epoch().count();
    worker_.start([this] { loop(); });
  }

  /// The report to publish next; published at once.
  void report(ExecutorReport report) {
    {
      std::lock_guard<std::mutex> lock(worker_.mutex);
      report_ = std::move(report);
      ++version_;
    }
    worker_.wake.notify_all();
  }
  /// Waits until the latest report has reached the store, up to `limit`.
  void flush(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(worker_.mutex);
    const uint64_t wanted = version_;
    worker_.wake.wait_for(lock, limit, [&] { return published_ >= wanted; });
  }
  std::vector<DriverMessage> takeMessages() {
    std::lock_guard<std::mutex> lock(worker_.mutex);
    return std::exchange(messages_, {});
  }
  Clock::time_point lastContact() const { return Clock::time_point(Clock::duration(last_contact_.load())); }
  Clock::time_point driverLastHeard() const { return Clock::time_point(Clock::duration(last_driver_beat_.load())); }

 private:
  void loop() {
    std::unique_ptr<Store> store;
    uint64_t seq = 0;
    int64_t read = first_message_;
    int64_t driver_beat = -1;
    bool failing = false;
    std::unique_lock<std::mutex> lock(worker_.mutex);
    while (!worker_.stopping) {
      ExecutorReport report = report_;
      const uint64_t version = version_;
      lock.unlock();
      try {
        if (!store) store = connectStore(id_, "the executor " + std::to_string(executor_), heartbeat_ * 4);
        report.seq = ++seq;
        store->set(store_keys::beat(executor_), encodeReport(report));
        std::vector<DriverMessage> fresh;
        const int64_t published = store->add(store_keys::kMessages, 0);
        for (int64_t next = read; next < published; ++next) {
          const std::string key = store_keys::message(next + 1);
          fresh.push_back(decodeMessage(store->get(key, heartbeat_ * 4), key));
        }
        read = std::max(read, published);
        const int64_t beat = store->add(store_keys::kDriverBeat, 0);
        const auto now = Clock::now().time_since_epoch().count();
        if (beat != driver_beat) last_driver_beat_ = now;
        driver_beat = beat;
        last_contact_ = now;
        if (failing) logLine(log_, "the job's store answers again");
        failing = false;
        lock.lock();
        published_ = std::max(published_, version);
        for (DriverMessage& m : fresh) messages_.push_back(std::move(m));
      } catch (const Error& e) {
        if (!failing) logLine(log_, "cannot reach the job's store (%s); retrying", e.what());
        failing = true;
        store.reset();  // a reply that comes late must not be taken for the next request's
        lock.lock();
      }
      worker_.wake.notify_all();
      worker_.wake.wait_for(lock, heartbeat_, [&] { return worker_.stopping || version_ != version; });
    }
  }

  UniqueId id_;
  int executor_;
  int64_t first_message_;
  std::chrono::milliseconds heartbeat_;
  std::FILE* log_;
  ExecutorReport report_;  // this and the rest under worker_.mutex
  uint64_t version_ = 0, published_ = 0;
  std::vector<DriverMessage> messages_;
  std::atomic<Clock::rep> last_contact_, last_driver_beat_;
  WorkerThread worker_;
};

// Pushes the files this host's ranks write in host memory to the executor that holds their replica.
class Replicator {
 public:
  Replicator(std::string dir, std::string secret, std::chrono::milliseconds period, std::FILE* log)
      : changed_(dir), dir_(std::move(dir)), secret_(std::move(secret)), period_(period), log_(log) {
    worker_.start([this] { loop(); });
  }
  /// Replicate these ranks' files to the executor at `address` (empty: to no one).
  void target(std::string address, std::string peer, std::vector<int> ranks) {
    std::lock_guard<std::mutex> lock(worker_.mutex);
    // A push still under way goes to the old holder, which may be the host just lost: its connection would
    // wait out its timeout while the new holder gets nothing. Cut it now.
    if (pushing_ != nullptr && address != address_) pushing_->interrupt();
    address_ = std::move(address);
    peer_ = std::move(peer);
    tops_.clear();
    for (int r : ranks) tops_.push_back(rankCheckpointDirName(r));
    changed_ = ChangedFiles(dir_);  // a new holder needs every file
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(worker_.mutex);
    bool failing = false;
    std::string last_peer;
    while (!worker_.stopping) {
      if (!address_.empty()) {
        const std::vector<std::string> files = changed_.scan(tops_);
        const std::string address = address_, peer = peer_;
        if (peer != last_peer) failing = false;  // a new holder: its failures are its own
        last_peer = peer;
        if (!files.empty()) {
          lock.unlock();
          std::vector<std::string> failed;
          try {
            // Connecting gets 1 s (a holder that is gone is given up soon), each file 5 s.
            ReplicaClient client(address, peer, secret_, std::chrono::milliseconds(5000), std::chrono::milliseconds(1000));
            const Pushing pushing(*this, client);  // declared after the client: cleared before it goes
            for (const std::string& path : files) {
              client.put(path, readWholeFile((fs::path(dir_) / path).string()));
            }
            if (failing) logLine(log_, "checkpoint replicas reach %s again", peer.c_str());
            failing = false;
          } catch (const std::exception& e) {
            if (!failing) logLine(log_, "cannot replicate checkpoints to %s: %s", peer.c_str(), e.what());
            failing = true;
            failed = files;
          }
          lock.lock();
          for (const std::string& path : failed) changed_.forget(path);
        }
      }
      worker_.wake.wait_for(lock, period_, [&] { return worker_.stopping; });
    }
  }

  // Makes `client` the push that target() may interrupt, for as long as it lives.
  struct Pushing {
    Pushing(Replicator& replicator, ReplicaClient& client) : r(replicator) { r.setPushing(&client); }
    ~Pushing() { r.setPushing(nullptr); }
    Replicator& r;
  };
  void setPushing(ReplicaClient* client) {
    std::lock_guard<std::mutex> lock(worker_.mutex);
    pushing_ = client;
  }

  ChangedFiles changed_;
  ReplicaClient* pushing_ = nullptr;  // the push under way, under worker_.mutex
  std::string dir_, secret_;
  std::chrono::milliseconds period_;
  std::FILE* log_;
  std::string address_, peer_;  // these under worker_.mutex
  std::vector<std::string> tops_;
  WorkerThread worker_;
};

class HostExecutor {
 public:
  HostExecutor(const ExecutorOptions& options, std::FILE* log) : o_(options), c_(options.cluster), log_(log) {}
  int run(volatile int* forward_signal);

 private:
  void runSlot(const DriverMessage& m);
  void stop(const DriverMessage& m);
  void checkLink(const DriverMessage& m);
  void stopRanks();
  void sendFlightRecords(int attempt);
  [[noreturn]] void fence(const std::string& why);
  int slotOf(const std::vector<int>& slots) const;
  // Another executor's info, on this loop's own store connection (idle for long stretches: made again if it broke).
  ExecutorInfo infoOf(int executor) {
    const std::string key = store_keys::info(executor);
    try {
      return decodeExecutorInfo(store_->get(key, c_.host_timeout), key);
    } catch (const Error&) {
      store_ = connectStore(o_.id, "the executor on host " + host_, c_.host_timeout);
      return decodeExecutorInfo(store_->get(key, c_.host_timeout), key);
    }
  }

  const ExecutorOptions& o_;
  const ClusterOptions& c_;
  std::FILE* log_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<MemoryCheckpoints> memory_;
  std::unique_ptr<Replicator> replicator_;
  std::unique_ptr<heartbeat::Table> table_;
  std::unique_ptr<FlightWatch> flights_;
  std::unique_ptr<ProcessGroup> group_;
  int executor_ = -1;
  std::string host_;
  ExecutorReport report_;
};

int HostExecutor::slotOf(const std::vector<int>& slots) const {
  for (size_t s = 0; s < slots.size(); ++s) {
    if (slots[s] == executor_) return static_cast<int>(s);
  }
  return -1;
}

void HostExecutor::stopRanks() {
  if (group_ && group_->alive() > 0) group_->stop(c_.stop_timeout);
}

void HostExecutor::fence(const std::string& why) {
  logLine(log_, "%s for over %.1f s: stopping this host's ranks and leaving the job (fenced)", why.c_str(),
          c_.host_timeout.count() / 1000.0);
  if (group_) group_->stop(std::chrono::milliseconds(0));
  std::fflush(nullptr);
  memory_.reset();
  // The store threads may be stuck on the cut link: leave without waiting for them.
  _exit(1);
}

void HostExecutor::runSlot(const DriverMessage& m) {
  report_.attempt = m.attempt;
  report_.self_check = report_.link_check = ExecutorReport::Check::kNone;
  report_.ranks.clear();
  const int slot = slotOf(m.slots);
  if (slot < 0) {
    report_.state = ExecutorReport::State::kIdle;
    replicator_->target("", "", {});
    return;
  }
  const int first = slot * c_.nproc;
  std::vector<int> ranks;
  for (int r = first; r < first + c_.nproc; ++r) ranks.push_back(r);
  const int source = m.replica_sources[static_cast<size_t>(slot)];
  if (source >= 0 && source != executor_) {
    const auto start = Clock::now();
    const ExecutorInfo holder = infoOf(source);
    try {
      size_t bytes = 0;
      ReplicaClient client(holder.replica_address, "host " + holder.host, o_.id.secret, c_.host_timeout);
      for (int r : ranks) {
        for (const auto& [path, data] : client.fetch(rankCheckpointDirName(r))) {
          const fs::path target = fs::path(memory_->path()) / path;
          fs::create_directories(target.parent_path());
          std::ofstream(target, std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(data.size()));
          bytes += data.size();
        }
      }
      logLine(log_, "took over slot %d (ranks %d-%d): fetched their checkpoints (%.1f MiB) from the replica on host %s in %.2f s",
              slot, first, first + c_.nproc - 1, static_cast<double>(bytes) / (1 << 20), holder.host.c_str(),
              secondsSince(start));
    } catch (const std::exception& e) {
      logLine(log_, "took over slot %d without its checkpoints in memory (the replica on host %s: %s); the ranks fall "
              "back to disk", slot, holder.host.c_str(), e.what());
    }
  }
  const int holder = replicaHolder(m.slots, slot);
  if (holder >= 0 && holder != executor_) {
    const ExecutorInfo info = infoOf(holder);
    replicator_->target(info.replica_address, "host " + info.host, ranks);
  } else {
    replicator_->target("", "", {});
  }
  table_->clear();
  flights_->clear();
  group_ = std::make_unique<ProcessGroup>();
  const std::string suffix = m.attempt > 0 ? "." + std::to_string(m.attempt) : "";
  for (int local = 0; local < c_.nproc; ++local) {
    std::map<std::string, std::string> env = rankEnvironment(o_.id, suffix, {c_.nproc, c_.world_size, first, true}, local);
    env["MEGASCALE_HEARTBEAT"] = table_->environmentValue(local);
    env.merge(flights_->environment(local));
    env["MEGASCALE_RESTART"] = std::to_string(m.attempt);
    env["MEGASCALE_MEMORY_CHECKPOINTS"] = memory_->path();
    // A replica pushed in the background may be a few steps behind the ranks it stands in for.
    if (std::getenv("MEGASCALE_MEMORY_CHECKPOINT_SLOTS") == nullptr) env["MEGASCALE_MEMORY_CHECKPOINT_SLOTS"] = "4";
    group_->spawn(first + local, o_.program, env);
  }
  report_.state = ExecutorReport::State::kRunning;
}

// The ranks' flight records as the stop found them (before anything is killed): kept on this host, and sent to
// the driver for its diagnosis. A store that does not take them costs the diagnosis, never the stop.
void HostExecutor::sendFlightRecords(int attempt) {
  const auto records = flights_->read(sampleRanks(*group_, *table_), {}, host_, "driver: stop of run " + std::to_string(attempt));
  flights_->write(records, "restart-" + std::to_string(attempt));
  try {
    store_->set(store_keys::flight(attempt, executor_), flight::toJsonList(records, kFlightOpsToDriver));
  } catch (const Error& e) {
    logLine(log_, "could not send this host's flight records to the driver: %s", e.what());
  }
}

void HostExecutor::stop(const DriverMessage& m) {
  const auto start = Clock::now();
  if (group_ && report_.state == ExecutorReport::State::kRunning) sendFlightRecords(m.attempt);
  if (group_) {
    for (int r : m.kill) {
      const auto& ranks = group_->ranks();
      for (size_t i = 0; i < ranks.size(); ++i) {
        if (ranks[i].rank == r && !ranks[i].exited) group_->signal(i, SIGKILL);
      }
    }
  }
  stopRanks();
  if (group_) logLine(log_, "stopped this host's %d ranks in %.2f s", c_.nproc, secondsSince(start));
  report_.ranks.clear();
  report_.attempt = m.attempt;
  report_.self_check = report_.link_check = ExecutorReport::Check::kNone;
  if (m.self_check && !o_.self_check_program.empty()) {
    UniqueId check_id = o_.id;
    check_id.job_id += ".selfcheck" + std::to_string(m.attempt) + ".e" + std::to_string(executor_);
    report_.self_check = selfCheckPasses(o_.self_check_program, check_id, c_.nproc, c_.self_check_timeout, log_)
                             ? ExecutorReport::Check::kPassed
                             : ExecutorReport::Check::kFailed;
  }
  report_.state = ExecutorReport::State::kStopped;
}

void HostExecutor::checkLink(const DriverMessage& m) {
  report_.attempt = m.attempt;
  const int position = slotOf(m.slots);
  if (position < 0) return;  // not in the next run
  const int next = replicaHolder(m.slots, position);
  report_.link_peer = next;
  std::string peer = "executor " + std::to_string(next);
  try {
    const ExecutorInfo info = infoOf(next);
    peer = "host " + info.host;
    ReplicaClient client(info.replica_address, peer, o_.id.secret, c_.host_timeout);
    const double gbps = client.probe(c_.link_check_bytes);
    report_.link_check = ExecutorReport::Check::kPassed;
    report_.link_kbps = static_cast<uint64_t>(gbps * 1e6);
    logLine(log_, "link check to %s: %.3f GB/s (%.0f MiB, exact)", peer.c_str(), gbps,
            static_cast<double>(c_.link_check_bytes) / (1 << 20));
  } catch (const std::exception& e) {
    report_.link_check = ExecutorReport::Check::kFailed;
    report_.link_kbps = 0;
    logLine(log_, "link check to %s FAILED: %s", peer.c_str(), e.what());
  }
}

int HostExecutor::run(volatile int* forward_signal) {
  host_ = topology::thisHostName();
  store_ = connectStore(o_.id, "the executor on host " + host_, c_.join_timeout);
  memory_ = std::make_unique<MemoryCheckpoints>(o_.id.job_id);
  const StoreAddress store_address = parseStoreUrl(o_.id.store_url);
  ReplicaServer replicas(memory_->path() + "/replicas", localAddressToward(store_address.host, store_address.port),
                         o_.id.secret, c_.host_timeout, log_);
  // The driver's messages to read start at their count before this executor joins: the driver posts the first
  // run as soon as it has read every executor's info below, which can be before the reporter starts reading.
  const int64_t first_message = store_->add(store_keys::kMessages, 0);
  executor_ = static_cast<int>(store_->add(store_keys::kJoined, 1) - 1);
  store_->set(store_keys::info(executor_), encodeExecutorInfo({host_, c_.nproc, replicas.address(), o_.preferred_slot}));
  store_->set(store_keys::beat(executor_), encodeReport(report_));
  logLine(log_, "host %s joined the job as executor %d (checkpoint replicas served at %s)%s", host_.c_str(), executor_,
          replicas.address().c_str(), executor_ == 0 ? "; it drives the job" : "");
  std::unique_ptr<ClusterDriver> driver;
  if (executor_ == 0) driver = std::make_unique<ClusterDriver>(c_, o_.id, log_);
  table_ = std::make_unique<heartbeat::Table>(c_.nproc);
  flights_ = std::make_unique<FlightWatch>(c_.nproc, defaultDiagnosisDirectory(o_.id.job_id));
  // Scanning a few files' sizes and times is cheap: look often, so a replica trails its ranks by little.
  replicator_ = std::make_unique<Replicator>(memory_->path(), o_.id.secret, std::chrono::milliseconds(20), log_);
  Reporter reporter(o_.id, executor_, first_message, c_.heartbeat, log_);
  auto next_sample = Clock::now();
  while (true) {
    if (group_ && group_->alive() > 0) {
      group_->pump(std::min(c_.heartbeat, std::chrono::milliseconds(20)));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (const int sig = *forward_signal; sig != 0 && isPreemptionNotice(sig)) {
      *forward_signal = 0;
      if (group_) askRanksToStop(*group_, sig, log_);  // they end as after their last step
    } else if (const int sig = *forward_signal; sig != 0) {
      *forward_signal = 0;
      if (group_) group_->signalAll(sig);
      const auto deadline = Clock::now() + c_.stop_timeout;
      while (group_ && group_->alive() > 0 && Clock::now() < deadline) group_->pump(std::chrono::milliseconds(10));
      stopRanks();
      report_.state = ExecutorReport::State::kSignal;
      report_.signal = sig;
      reporter.report(report_);
      reporter.flush(c_.host_timeout);
      logLine(log_, "received signal %s: forwarded it to this host's ranks; ending the job", strsignal(sig));
      if (driver && !driver->finished(c_.host_timeout)) {
        std::fflush(nullptr);
        _exit(128 + sig);  // the driver is stuck: the other hosts see its silence and fence themselves
      }
      return 128 + sig;
    }
    const auto now = Clock::now();
    if (now - reporter.lastContact() > c_.host_timeout) fence("cannot reach the job's store");
    if (now - reporter.driverLastHeard() > c_.host_timeout) fence("the job's driver has not answered");
    for (const DriverMessage& m : reporter.takeMessages()) {
      if (m.kind == DriverMessage::Kind::kEnd) {
        stopRanks();
        if (m.exit_code != 0) logLine(log_, "the job ended: %s", m.summary.c_str());
        return m.exit_code;
      }
      if (m.kind == DriverMessage::Kind::kStop) stop(m);
      if (m.kind == DriverMessage::Kind::kLinks) checkLink(m);
      if (m.kind == DriverMessage::Kind::kRun) runSlot(m);
      reporter.report(report_);
    }
    if (now < next_sample) continue;
    next_sample = now + c_.heartbeat;
    if (group_ && report_.state == ExecutorReport::State::kRunning) {
      report_.ranks = sampleRanks(*group_, *table_);
      addFlightView(report_.ranks, flights_->read(report_.ranks, {}, host_, "status"));
      bool all_ok = group_->alive() == 0;
      for (const RankProcess& p : group_->ranks()) all_ok = all_ok && !failed(p.wait_status);
      if (all_ok) {
        group_->drain(std::chrono::milliseconds(200));
        report_.state = ExecutorReport::State::kDone;
      }
    }
    reporter.report(report_);
  }
}

}  // namespace

int runHostExecutor(const ExecutorOptions& options, std::FILE* log, volatile int* forward_signal) {
  HostExecutor executor(options, log);
  return executor.run(forward_signal);
}

}  // namespace megascale::launcher
