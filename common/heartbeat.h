// Heartbeats: what each rank reports to its host's executor (megascale-run), in shared memory the executor
// made and the rank inherited. A report is a few relaxed atomic stores into the rank's slot: no system call,
// no lock, nothing the rank waits for, so the library reports every collective and the trainer every phase.
// The executor samples the slots every --heartbeat-ms and decides (launcher/fault_detector.h): a slot that
// stops moving while its peers wait in a collective names the rank that hangs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/shared_table.h"

namespace megascale::heartbeat {

/// One rank's slot. Every field is written by the rank alone and read by the executor at any time.
struct Slot {
  std::atomic<uint64_t> pid;               // set when the rank first reports
  std::atomic<int64_t> step;               // mscHeartbeat's step (meaningful once beats > 0)
  std::atomic<uint64_t> phase;             // mscHeartbeat's phase, packed (packName)
  std::atomic<uint64_t> beats;             // mscHeartbeat calls
  std::atomic<uint64_t> ops_issued;        // operations issued on every communicator of the process
  std::atomic<uint64_t> ops_completed;     // ... and finished, well or not
  std::atomic<uint64_t> op_group;          // the communicator of the latest issued operation, packed
  std::atomic<uint32_t> op_seq;            // its sequence number there
  std::atomic<uint32_t> op_kind;           // its Collective (collectives/schedule.h), + 1; 0: none yet
  std::atomic<uint64_t> transport_errors;  // operations that failed because a peer or link failed
  std::atomic<uint64_t> other_errors;      // operations that failed otherwise (mismatch, invalid use, abort)
};
constexpr size_t kSlotBytes = 128;
static_assert(sizeof(Slot) <= kSlotBytes);

/// Up to 8 bytes of a name in one word (the rest cut), so that a name is written with one atomic store.
constexpr uint64_t packName(std::string_view name) {
  uint64_t packed = 0;
  for (size_t i = 0; i < name.size() && i < sizeof(packed); ++i) {
    packed |= static_cast<uint64_t>(static_cast<unsigned char>(name[i])) << (8 * i);
  }
  return packed;
}
std::string unpackName(uint64_t packed);

/// The calling process's slot, or nullptr when no executor asked for reports (MEGASCALE_HEARTBEAT unset or
/// malformed: a warning says which). Mapped at the first call; a forked child reports nothing.
Slot* mySlot();

/// mscHeartbeat: the step and phase (e.g. "forward", "ckpt") the rank is in. No-op without a slot.
void reportStep(int64_t step, std::string_view phase);
/// The library's own reports: an operation issued on `group`, an operation finished.
void reportIssued(uint64_t packed_group, uint32_t seq, uint32_t collective_kind);
enum class Outcome { kOk, kTransportError, kOtherError };
void reportFinished(Outcome outcome);

/// The executor's side: `count` zeroed slots in a memfd that the ranks it starts inherit.
class Table {
 public:
  explicit Table(int count) : table_("megascale-heartbeats", count, kSlotBytes) {}

  int count() const { return table_.count(); }
  Slot& slot(int index) { return *reinterpret_cast<Slot*>(table_.area(index)); }
  const Slot& slot(int index) const { return *reinterpret_cast<const Slot*>(table_.area(index)); }
  /// MEGASCALE_HEARTBEAT's value for the rank that reports into slot `index`: "fd:index".
  std::string environmentValue(int index) const { return table_.environmentValue(index); }
  /// Zeroes every slot (before a restart's ranks start).
  void clear() { table_.clear(); }

 private:
  SharedTable table_;
};

}  // namespace megascale::heartbeat
