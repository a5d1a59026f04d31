// The flight recorder: every communicator keeps its last operations (what, how large, which algorithm, its
// state, whom a stalled run waits for, when it was issued, started and finished) in this process's recorder
// area (collectives/flight_record.h). Under megascale-run the area is in a table the executor made
// (MEGASCALE_FLIGHT_RECORDS), so the driver reads it at any time, even from a rank that is stopped or dead;
// otherwise it is private memory. The process writes its record as JSON (collectives/flight_dump.h) into
// MEGASCALE_FLIGHT_RECORDER_DIR on SIGUSR1 and after an operation times out.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "collectives/flight_dump.h"
#include "collectives/flight_record.h"
#include "collectives/schedule.h"
#include "common/status.h"
#include "megascale/megascale.h"

namespace megascale::flight {

/// This process's recorder (made at the first use). Off (records nothing) with MEGASCALE_FLIGHT_RECORDER=0.
class Recorder {
 public:
  static Recorder& process();

  bool enabled() const { return area_ != nullptr; }
  /// A block for a new communicator: rank `rank` of `size`, whose group rank i is world rank world_rank_of(i).
  /// Null when off or when every block is live (a warning says so once).
  GroupBlock* claim(uint64_t packed_name, int rank, int size, const std::function<int(int)>& world_rank_of);
  /// The communicator is gone: its block is kept for dumps and reused once no free block is left.
  void release(GroupBlock* block);
  /// The rank in the job's world (the first root communicator sets it).
  void setWorldRank(int rank);
  /// The program's coordinates ("tp 1 pp 0 dp 2", at most 32 characters), shown in dumps and diagnoses.
  void setCoordinates(std::string_view coordinates);
  /// What setCoordinates set ("" when none, or when off).
  std::string coordinates() const;

  /// The record now, taken for `reason`.
  RankRecord snapshot(const std::string& reason) const;
  /// Writes snapshot(reason) as JSON to MEGASCALE_FLIGHT_RECORDER_DIR/rank-RRRRR.json (replacing the previous
  /// dump, atomically). The path, or "" (with a warning) when it could not.
  std::string dump(const std::string& reason) const;
  /// After an operation timed out: dump(), at most once per 10 s (every rank of a stalled job times out).
  void dumpAfterTimeout(const std::string& what);

 private:
  Recorder();
  static char* privateArea();
  void format();
  void installSignalDump();
  void startDumper();
  void restartAfterFork();

  std::atomic<pid_t> pid_;  // the process the area and the dumper thread belong to
  char* area_ = nullptr;
  std::atomic<int64_t> last_timeout_dump_ns_{0};
};

/// One communicator's writer over its block; does nothing without one. issued() is called by one thread at a
/// time (under the communicator's queue lock); the others by the thread running the operation.
class GroupLog {
 public:
  GroupLog() = default;
  ~GroupLog();  // releases the block
  GroupLog(const GroupLog&) = delete;
  GroupLog& operator=(const GroupLog&) = delete;

  /// Writes into `block` (null: nothing), releasing any block held before.
  void attach(Recorder& recorder, GroupBlock* block);
  void setName(uint64_t packed_name);

  struct Issue {
    Collective kind;
    mscDataType_t dtype;
    mscRedOp_t redop;
    Algorithm algorithm;
    int root;        // -1: none
    uint64_t count;  // elements
    uint32_t seq;    // collectives: the communicator's; ignored for send/recv (counted here)
    int peer_count = 0, send_peer = -1, recv_peer = -1;  // send/recv
  };
  /// Records an issued operation; its ticket for the calls below (0: nothing recorded).
  uint64_t issued(const Issue& op);
  /// The operation started running with `algorithm` (Algorithm, or kNodeEngine).
  void started(uint64_t ticket, uint8_t algorithm);
  void finished(uint64_t ticket, ErrorCode code);
  /// Where a stalled run writes the group rank it waits for; null when the entry is gone or none is kept.
  std::atomic<int32_t>* waitingFor(uint64_t ticket);

 private:
  /// The ticket's entry while the ring has not reused it.
  Entry* entry(uint64_t ticket);

  Recorder* recorder_ = nullptr;
  GroupBlock* block_ = nullptr;
};

}  // namespace megascale::flight
