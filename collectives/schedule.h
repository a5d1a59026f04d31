// The types every algorithm and the executor share. Algorithms are schedules: a pure function of (collective,
// count, rank, ranks, root, algorithm) that lists, for one rank, what to send, receive, copy and reduce, phase
// by phase. One executor runs any schedule over any transport; tests simulate all ranks' schedules in memory;
// the network simulator replays them. The algorithms themselves are rows (algorithms/registry.h); the choice
// among them is algorithm_choice.h.
//
// A phase's communication steps (transfers and host steps) run concurrently; its local steps run after they all
// complete, in order.
// Offsets and counts are in elements of the operation's dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace megascale {

struct HostLayout;
struct LinkCosts;

enum class Collective : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kBarrier,
  kSendRecv,  // point-to-point groups; built by the caller, not by buildSchedule
};
inline constexpr size_t kCollectiveCount = static_cast<size_t>(Collective::kSendRecv) + 1;
const char* collectiveName(Collective c);  // "all_reduce", ...
/// True for the collectives that take a reduction operator.
constexpr bool reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
}

/// An algorithm's id; what it implements, its name and its price are its row (algorithms/algorithm_row.h).
enum class Algorithm : uint8_t {
  kAuto,
  kRing,                    // all-reduce, all-gather, reduce-scatter
  kRecursiveHalvingDoubling,  // all-reduce (Rabenseifner; non-powers of two fold the extra ranks first)
  kDirect,                  // all-reduce: every rank sends its vector to every other; best for tiny messages
  kBinomialTree,            // broadcast, reduce
  kPairwise,                // all-to-all
  kDissemination,           // barrier
  kHierarchical,            // all-reduce, all-gather, reduce-scatter across hosts (needs ScheduleSpec::hosts)
  kDoubleBinaryTree,        // all-reduce: two pipelined binary trees; 2 log2(n) hops instead of the ring's 2(n-1)
  kPipelinedRing,           // all-reduce: up to 4 ring sections in flight, one reducing while the next transfers
  kBruck,                   // all-to-all: ceil(log2 n) rounds of packed blocks; for small blocks
};

/// Buffers a step can name. kUser + i are extra buffers (point-to-point groups).
enum BufferId : uint16_t { kInput = 0, kOutput = 1, kScratch = 2, kUser = 3 };

struct Slice {
  uint16_t buffer = kInput;
  size_t offset = 0;
  size_t count = 0;
};

struct Step {
  // kHost*: a collective among the ranks of this rank's host (ScheduleSpec::hosts, in local order), run by the
  // node engine through shared memory; the k-th host step of every rank of a host is one call. With L ranks on
  // the host: kHostReduceScatter reduces block `local` (dst.count elements) of every rank's `a` (L blocks) into
  // dst; kHostAllGather puts local rank q's `a` into block q of dst (L blocks of a.count); kHostAllReduce
  // reduces every rank's `a` into dst (a.count == dst.count).
  enum Kind : uint8_t { kSend, kRecv, kCopy, kReduce, kHostReduceScatter, kHostAllGather, kHostAllReduce };
  Kind kind;
  int peer = -1;  // kSend, kRecv
  Slice a;        // kSend: source; kCopy: source; kReduce: left operand; kHost*: input
  Slice b;        // kReduce: right operand
  Slice dst;      // kRecv, kCopy, kReduce, kHost*: destination
  bool isHost() const { return kind == kHostReduceScatter || kind == kHostAllGather || kind == kHostAllReduce; }
};

struct Phase {
  std::vector<Step> comm;
  std::vector<Step> local;
};

struct Schedule {
  std::vector<Phase> phases;
  size_t scratch_count = 0;
  /// The part of the output this rank owns after the schedule (where avg divides); count 0 if none.
  Slice result{kOutput, 0, 0};
};

struct ScheduleSpec {
  Collective collective;
  Algorithm algorithm = Algorithm::kAuto;
  size_t count = 0;  // per-rank count as in the C API (send count for all-gather, recv count for reduce-scatter)
  int rank = 0;
  int nranks = 1;
  int root = 0;
  bool in_place = false;  // input and output alias as NCCL defines in-place for this collective
  const HostLayout* hosts = nullptr;  // which ranks share a host; hierarchical algorithms need it
  const LinkCosts* links = nullptr;   // the job's link rates for the cost model; null: LinkCosts' defaults
  bool host_steps = false;  // the executor runs kHost* steps (a node engine serves this rank's host)
};

/// Element counts of the input and output buffers a spec uses.
size_t inputCount(const ScheduleSpec& spec);
size_t outputCount(const ScheduleSpec& spec);

/// The bytes a step reads (up to two slices) and writes (at most one); count 0 where none.
struct StepAccess {
  Slice reads[2];
  Slice write;
};
StepAccess accessOf(const Step& step);

/// Whether a later step must wait for an earlier one: read after write, write after read, write after write.
/// `overlap(x, y)` says whether two slices share bytes (the executor compares real addresses, so in-place
/// buffers count; the replay compares buffer and offset).
template <typename Overlap>
bool stepsConflict(const StepAccess& earlier, const StepAccess& later, const Overlap& overlap) {
  for (const Slice& r : later.reads) if (overlap(earlier.write, r)) return true;
  for (const Slice& r : earlier.reads) if (overlap(r, later.write)) return true;
  return overlap(earlier.write, later.write);
}

/// Steps run as data flow within a window of phases: a step may start while the oldest unfinished phase is at
/// most this many phases behind its own (the executor, and the network simulator's replay of it).
inline constexpr size_t kDataFlowWindowPhases = 16;

/// [begin, begin+count) of block i when `total` elements are cut into `blocks` nearly equal blocks.
struct Block {
  size_t begin;
  size_t count;
};
Block blockOf(size_t total, int blocks, int index);

/// Human-readable listing of a schedule, for --dump-schedule and test failures.
std::string describeSchedule(const Schedule& s);

}  // namespace megascale
