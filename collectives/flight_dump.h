// A flight record as data: one rank's communicators and their last operations, read from the recorder's memory
// (collectives/flight_record.h) at one moment, with every time as seconds before that moment. The same record
// is written as JSON (the dump a rank writes on a timeout or SIGUSR1, and the driver for each rank on a fault)
// and read back from JSON (megascale-diagnose), so the diagnosis sees one shape whichever way it came.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/flight_record.h"

namespace megascale::flight {

struct OpRecord {
  uint32_t seq = 0;        // collectives: the group's sequence number; send/recv: its own count
  std::string kind;        // "all_reduce", ..., "sendrecv"
  std::string dtype;       // "float", ...
  std::string redop;       // "sum", ...; "" when the operation reduces nothing
  std::string algorithm;   // "ring", "hier", ...; "" until it started
  int root = -1;           // group rank; -1 none
  uint64_t count = 0;      // elements per rank as the caller passed them
  uint64_t bytes = 0;      // count x the dtype's size
  std::string state;       // "queued", "running", "done", "failed"
  std::string error;       // the error code's name once failed
  int waiting_for = -1;    // world rank a stalled run waits on; -1 none known
  double issued_s = 0;     // seconds before the record was taken
  double started_s = -1;   // -1: not started
  double finished_s = -1;  // -1: not finished
  int peer_count = 0;      // send/recv: operations in the group
  int send_peer = -1;      // send/recv: world rank of the first send's peer; -1 none
  int recv_peer = -1;      // ... of the first receive's
  bool pointToPoint() const { return kind == "sendrecv"; }
  bool inFlight() const { return state == "queued" || state == "running"; }
};

struct GroupRecord {
  std::string name;          // "tp", "dp", ... (Communicator::setName)
  int rank = 0;              // the recording rank's rank in the group
  int size = 0;
  std::vector<int> members;  // world rank of each group rank (a large irregular group: the first 256)
  uint32_t collectives = 0;  // collectives issued: the next one's seq
  uint32_t point_to_point = 0;
  bool closed = false;       // its communicator is gone
  std::vector<OpRecord> ops;  // oldest first; the last kEntries at most
};

struct RankRecord {
  int rank = -1;            // world rank; -1 before the first communicator
  int64_t pid = 0;
  std::string host;
  std::string coordinates;  // "tp 1 pp 0 dp 2", as the program set it (mscSetCoordinates)
  double taken_at = 0;      // unix time of the record, seconds
  std::string reason;       // why it was taken: "SIGUSR1", "timeout in all_reduce #12 of dp", ...
  // What the executor saw of the process (empty in a rank's own dump): "running", "stopped by a signal",
  // "was killed by signal 9 (Killed)", "exited with status 1"; its last heartbeat ("step 12 forward, in all_reduce #40 of dp"); and
  // how long since its heartbeats or operations last moved (-1 unknown).
  std::string process;
  std::string last_report;
  double stalled_s = -1;
  std::vector<GroupRecord> groups;
};

/// Reads a recorder area at time `now_ns` (recorderNowNs). Entries being rewritten are left out. An area not
/// formatted (magic unset) gives a record with no groups.
RankRecord readArea(const char* area, int64_t now_ns);
/// The coordinates a recorder area holds ("" when none).
std::string readCoordinates(const char* area);

/// One JSON object, indented.
std::string toJson(const RankRecord& record);
/// Parses toJson's output. Throws Error(kInvalidArgument) naming the field that is missing or malformed.
RankRecord rankRecordFromJson(const std::string& text);
/// Several records as one compact JSON list, each group's operations cut to its last `max_ops` (what a host
/// sends the driver through the store), and back.
std::string toJsonList(const std::vector<RankRecord>& records, size_t max_ops);
std::vector<RankRecord> rankRecordsFromJsonList(const std::string& text);

}  // namespace megascale::flight
