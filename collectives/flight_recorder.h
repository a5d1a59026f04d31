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
  /// The operation started running with `algorithm` (an Algorithm).
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

// The writer is inline: it runs on every operation, the small-message path included.

inline uint64_t GroupLog::issued(const Issue& op) {
  if (block_ == nullptr) return 0;
  const uint64_t ticket = block_->ops.load(std::memory_order_relaxed) + 1;
  Entry& e = block_->entries[(ticket - 1) % kEntries];
  // Odd: readers drop what they copy now. An acquire-release exchange rather than a fence (which TSan cannot
  // check): the stores below cannot move above it.
  const uint32_t version = e.version.fetch_add(1, std::memory_order_acq_rel);
  uint32_t seq = op.seq;
  if (op.kind == Collective::kSendRecv) {
    seq = block_->point_to_point.load(std::memory_order_relaxed);
    block_->point_to_point.store(seq + 1, std::memory_order_relaxed);
  } else {
    block_->collectives.store(seq + 1, std::memory_order_relaxed);
  }
  e.seq.store(seq, std::memory_order_relaxed);
  e.kind.store(static_cast<uint8_t>(op.kind), std::memory_order_relaxed);
  e.dtype.store(static_cast<uint8_t>(op.dtype), std::memory_order_relaxed);
  e.redop.store(static_cast<uint8_t>(op.redop), std::memory_order_relaxed);
  e.algorithm.store(static_cast<uint8_t>(op.algorithm), std::memory_order_relaxed);
  e.root.store(op.root, std::memory_order_relaxed);
  e.count.store(op.count, std::memory_order_relaxed);
  e.issued_ns.store(recorderNowNs(), std::memory_order_relaxed);
  // The times, the error and the peers of the entry's last operation stay: the state says which fields hold
  // (started once running, finished and error once done or failed, peers for send/recv only). Fewer stores on
  // the small-message path.
  e.waiting_for.store(-1, std::memory_order_relaxed);
  if (op.kind == Collective::kSendRecv) {
    e.peer_count.store(static_cast<int16_t>(op.peer_count), std::memory_order_relaxed);
    e.send_peer.store(op.send_peer, std::memory_order_relaxed);
    e.recv_peer.store(op.recv_peer, std::memory_order_relaxed);
  }
  e.state.store(static_cast<uint8_t>(OpState::kQueued), std::memory_order_relaxed);
  e.version.store(version + 2, std::memory_order_release);
  block_->ops.store(ticket, std::memory_order_release);
  return ticket;
}

inline Entry* GroupLog::entry(uint64_t ticket) {
  if (block_ == nullptr || ticket == 0) return nullptr;
  // Over kEntries operations in flight reuse the entry of this one: its later states are then not recorded.
  if (block_->ops.load(std::memory_order_relaxed) - ticket >= static_cast<uint64_t>(kEntries)) return nullptr;
  return &block_->entries[(ticket - 1) % kEntries];
}

inline void GroupLog::started(uint64_t ticket, uint8_t algorithm) {
  Entry* e = entry(ticket);
  if (e == nullptr) return;
  e->algorithm.store(algorithm, std::memory_order_relaxed);
  e->started_ns.store(recorderNowNs(), std::memory_order_relaxed);
  e->state.store(static_cast<uint8_t>(OpState::kRunning), std::memory_order_release);
}

inline void GroupLog::finished(uint64_t ticket, ErrorCode code) {
  Entry* e = entry(ticket);
  if (e == nullptr) return;
  e->finished_ns.store(recorderNowNs(), std::memory_order_relaxed);
  e->error.store(static_cast<uint8_t>(code), std::memory_order_relaxed);
  // A failed run keeps whom it waited for: that is what its dump is read for.
  if (code == ErrorCode::kOk) e->waiting_for.store(-1, std::memory_order_relaxed);
  e->state.store(static_cast<uint8_t>(code == ErrorCode::kOk ? OpState::kDone : OpState::kFailed),
                 std::memory_order_release);
}

inline std::atomic<int32_t>* GroupLog::waitingFor(uint64_t ticket) {
  Entry* e = entry(ticket);
  return e == nullptr ? nullptr : &e->waiting_for;
}

}  // namespace megascale::flight
