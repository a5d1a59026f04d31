// The flight recorder's memory: for one process, a block per communicator holding its identity (name, members)
// and a ring of its last operations. The library writes it with relaxed atomic stores (no lock, no system call);
// readers are the process itself (a dump on a timeout or SIGUSR1) and, when the area lives in a table megascale-run
// made (common/shared_table.h), the executor, which reads the records of a rank that is stopped or dead.
// Everything here is fixed-size and position-independent, so another process reads it as it is.
//
// A reader copies an entry between two reads of its version (a seqlock: odd while the entry is being rewritten
// for a new operation) and drops a torn copy; the state of a live entry moves forward only (queued, running,
// done or failed), each timestamp stored before the state that announces it. Fields the state does not vouch
// for (a queued entry's start, a running one's end, a collective's send/recv peers) may be the previous
// operation's: readers ignore them.
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace megascale::flight {

constexpr uint32_t kMagic = 0x3152464d;  // "MFR1": the area is formatted
constexpr int kMaxGroups = 48;           // communicators with a block; later ones record nothing (a warning says so)
constexpr int kEntries = 128;            // operations kept per communicator (a power of two)
constexpr int kListedMembers = 256;      // members listed; a larger group is recorded as first + i * stride only
constexpr int kCoordinateWords = 4;      // 32 characters of coordinates ("tp 1 pp 0 dp 2")

enum class OpState : uint8_t { kEmpty = 0, kQueued, kRunning, kDone, kFailed };

struct Entry {
  std::atomic<uint32_t> version;   // seqlock
  std::atomic<uint32_t> seq;       // collectives: the communicator's sequence number; send/recv: its own count
  std::atomic<uint8_t> kind;       // Collective (collectives/schedule.h)
  std::atomic<uint8_t> dtype;      // mscDataType_t
  std::atomic<uint8_t> redop;      // mscRedOp_t
  std::atomic<uint8_t> algorithm;  // Algorithm; kAuto until the operation starts
  std::atomic<int32_t> root;       // group rank; -1: none
  std::atomic<uint64_t> count;     // elements per rank as the caller passed them (send/recv: of the first op)
  std::atomic<int64_t> issued_ns;  // CLOCK_MONOTONIC_COARSE (the same in every process of the host)
  std::atomic<int64_t> started_ns;
  std::atomic<int64_t> finished_ns;
  std::atomic<int32_t> waiting_for;  // group rank a stalled run waits on; -1: none known
  std::atomic<uint8_t> state;        // OpState
  std::atomic<uint8_t> error;        // ErrorCode once failed
  std::atomic<int16_t> peer_count;   // send/recv: operations in the group
  std::atomic<int32_t> send_peer;    // send/recv: the first send's peer, -1 none
  std::atomic<int32_t> recv_peer;    // ... and the first receive's
};
static_assert(sizeof(Entry) == 64);

enum class GroupState : uint32_t { kFree = 0, kLive, kClosed };

struct GroupBlock {
  std::atomic<uint32_t> state;       // GroupState; a closed block (its communicator is gone) is reused last
  std::atomic<uint32_t> generation;  // bumped at every claim
  std::atomic<uint64_t> name;        // packed (heartbeat::packName)
  std::atomic<int32_t> rank;         // this process's rank in the group
  std::atomic<int32_t> size;
  std::atomic<int32_t> member_first;   // world rank of group rank i: member_first + i * member_stride when the
  std::atomic<int32_t> member_stride;  // stride is not 0, else members[i]
  std::atomic<uint64_t> ops;           // entries written: the newest is entries[(ops - 1) % kEntries]
  std::atomic<uint32_t> collectives;   // collectives issued (the next one's seq)
  std::atomic<uint32_t> point_to_point;  // send/recv groups issued
  std::atomic<int32_t> members[kListedMembers];
  Entry entries[kEntries];
};

struct Header {
  std::atomic<uint32_t> magic;
  std::atomic<uint32_t> groups;  // blocks ever claimed (blocks past it are untouched)
  std::atomic<uint64_t> pid;
  std::atomic<int32_t> world_rank;  // -1 until the first communicator is made
  std::atomic<uint64_t> coordinates[kCoordinateWords];
};

/// The clock the recorder writes, in ns: CLOCK_MONOTONIC_COARSE, a few ns to read (the precise clock costs
/// ~25 ns in a VM, three times per operation), its tick of 1-4 ms far finer than the hangs and waits it times.
/// The same in every process of the host.
inline int64_t recorderNowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

constexpr size_t roundUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }
constexpr size_t kHeaderBytes = 4096;
constexpr size_t kGroupBytes = roundUp(sizeof(GroupBlock), 64);
/// One process's area: a multiple of the page size, so that areas side by side in a table stay page-aligned.
constexpr size_t kAreaBytes = roundUp(kHeaderBytes + kMaxGroups * kGroupBytes, 4096);
static_assert(sizeof(Header) <= kHeaderBytes);

inline Header& header(char* area) { return *reinterpret_cast<Header*>(area); }
inline const Header& header(const char* area) { return *reinterpret_cast<const Header*>(area); }
inline GroupBlock& group(char* area, int index) {
  return *reinterpret_cast<GroupBlock*>(area + kHeaderBytes + static_cast<size_t>(index) * kGroupBytes);
}
inline const GroupBlock& group(const char* area, int index) {
  return *reinterpret_cast<const GroupBlock*>(area + kHeaderBytes + static_cast<size_t>(index) * kGroupBytes);
}

}  // namespace megascale::flight
