// What the hosts' executors and the job's driver say to each other through the job's store, when one job spans
// hosts (launcher/host_executor.h, launcher/cluster_driver.h). Text in store values, parsed strictly: a value
// that is not what its writer would write is refused with an error naming the key, never half-read.
//   driver/joined        counter: an executor's number is the value its add() returned, minus 1
//   driver/exec/<k>      executor k: "host <name> nproc <n> replicas <ip:port> slot <preferred or -1>"
//   driver/beat/<k>      executor k's report, rewritten every heartbeat (ExecutorReport)
//   driver/beat/driver   the driver's sequence number, rewritten every heartbeat
//   driver/messages      counter: how many messages the driver has published
//   driver/message/<m>   the driver's message m (DriverMessage), m counted from 1
//   driver/flight/<a>/<k>  executor k's flight records at the stop of attempt a (JSON)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/fault_detector.h"

namespace megascale::launcher {

namespace store_keys {
inline const std::string kJoined = "driver/joined";
inline const std::string kMessages = "driver/messages";
inline const std::string kDriverBeat = "driver/beat/driver";
inline std::string info(int executor) { return "driver/exec/" + std::to_string(executor); }
inline std::string beat(int executor) { return "driver/beat/" + std::to_string(executor); }
inline std::string message(int64_t number) { return "driver/message/" + std::to_string(number); }
/// Executor k's flight records of its ranks as the driver's stop of `attempt` found them (a JSON list,
/// collectives/flight_dump.h).
inline std::string flight(int attempt, int executor) {
  return "driver/flight/" + std::to_string(attempt) + "/" + std::to_string(executor);
}
}  // namespace store_keys

struct ExecutorInfo {
  std::string host;           // its host name (MEGASCALE_HOST_NAME or hostname)
  int nproc = 0;              // ranks it starts
  std::string replica_address;  // ip:port of its checkpoint replica server
  int preferred_slot = -1;    // from --rank-offset, else -1
};
std::string encodeExecutorInfo(const ExecutorInfo& info);
ExecutorInfo decodeExecutorInfo(const std::string& text, const std::string& key);

struct ExecutorReport {
  enum class State { kIdle, kRunning, kDone, kStopped, kSignal, kFenced };
  enum class Check { kNone, kPassed, kFailed };
  uint64_t seq = 0;      // moves with every report: an executor whose seq stands still has stopped answering
  int attempt = -1;      // the attempt its state is about
  State state = State::kIdle;
  Check self_check = Check::kNone;
  int signal = 0;                  // kSignal: the signal it got
  // The link check of `attempt` (DriverMessage kLinks): the executor it probed and the rate (kB/s)
  Check link_check = Check::kNone;
  int link_peer = -1;
  uint64_t link_kbps = 0;
  std::vector<RankSample> ranks;   // kRunning: its ranks as its last sample saw them
};
const char* executorStateName(ExecutorReport::State state);
std::string encodeReport(const ExecutorReport& report);
ExecutorReport decodeReport(const std::string& text, const std::string& key);

struct DriverMessage {
  enum class Kind { kRun, kStop, kLinks, kEnd };
  Kind kind = Kind::kRun;
  int attempt = 0;
  // kRun: executor of each host slot (slot s runs ranks s * nproc ...), and for each slot the executor whose
  // replicas hold that slot's checkpoints (-1: none; the slot's own executor holds them)
  // kLinks: the executors of the next run's slots: each probes the link to the next one (the ring)
  std::vector<int> slots;
  std::vector<int> replica_sources;
  // kStop: ranks to kill at once (they hang), whether to run the self-check afterwards
  std::vector<int> kill;
  bool self_check = false;
  // kEnd: the job's exit code and what ended it
  int exit_code = 0;
  std::string summary;
};
std::string encodeMessage(const DriverMessage& message);
DriverMessage decodeMessage(const std::string& text, const std::string& key);

}  // namespace megascale::launcher
