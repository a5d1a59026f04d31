// Bruck all-to-all for small blocks (Bruck et al., IEEE TPDS 1997). Why: pairwise exchange takes n-1 rounds,
// each a latency for one small block; Bruck takes ceil(log2 n) rounds, each moving about half of the blocks, so
// where latency outweighs the extra bytes (small blocks, many ranks) it finishes sooner. It pays in copies:
// blocks are packed before and unpacked after each round.
//
// Rank r first rotates its blocks: slot i holds the block for rank r+i. In round k every slot whose index has
// bit k set moves to rank r + 2^k, staying in its slot; a block in slot i thus travels i ranks in all and ends
// at its destination, in slot (destination - source). Rank r finally takes the block from source s out of slot
// r - s (mod n).
#include <algorithm>
#include <vector>

#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

namespace {

struct Run {  // slots [begin, begin + count)
  int begin;
  int count;
};

// The slots moving in the round at distance `dist` (a power of two): runs of `dist` slots every 2 * dist.
std::vector<Run> movingSlots(int n, int dist) {
  std::vector<Run> runs;
  for (int begin = dist; begin < n; begin += 2 * dist) runs.push_back(Run{begin, std::min(dist, n - begin)});
  return runs;
}

int slotsIn(const std::vector<Run>& runs) {
  int total = 0;
  for (const Run& run : runs) total += run.count;
  return total;
}

// How many runs and slots move in the round at distance `dist`, without listing them (the cost model prices
// every small all-to-all).
struct RoundSize {
  int runs = 0;
  int slots = 0;
};
RoundSize roundSize(int n, int dist) {
  RoundSize size;
  for (int begin = dist; begin < n; begin += 2 * dist) {
    ++size.runs;
    size.slots += std::min(dist, n - begin);
  }
  return size;
}

Schedule bruckAllToAll(const ScheduleSpec& spec) {
  const int n = spec.nranks, r = spec.rank;
  const size_t c = spec.count;
  Schedule s;
  if (n == 1) {
    s.phases.push_back(copyPhase(in(0, c), out(0, c)));
    return s;
  }
  // Scratch: the n rotated slots, then a packing area and an arrival area of the largest round's size.
  int largest_round = 0;
  for (int dist = 1; dist < n; dist *= 2) largest_round = std::max(largest_round, roundSize(n, dist).slots);
  const size_t pack_at = c * static_cast<size_t>(n), arrive_at = pack_at + c * static_cast<size_t>(largest_round);
  s.scratch_count = arrive_at + c * static_cast<size_t>(largest_round);
  auto slot = [&](int i, int count) { return scratch(c * static_cast<size_t>(i), c * static_cast<size_t>(count)); };

  // Rotation (slot 0, this rank's own block, goes straight to the output; every input read happens here, so an
  // in-place output is written only after).
  Phase start;
  const size_t after_me = c * static_cast<size_t>(n - r - 1), before_me = c * static_cast<size_t>(r);
  if (after_me > 0) start.local.push_back(copy(in(c * static_cast<size_t>(r + 1), after_me), slot(1, n - r - 1)));
  if (before_me > 0) start.local.push_back(copy(in(0, before_me), slot(n - r, r)));
  start.local.push_back(copy(in(c * static_cast<size_t>(r), c), out(c * static_cast<size_t>(r), c)));
  Phase* previous = &s.phases.emplace_back(std::move(start));
  for (int dist = 1; dist < n; dist *= 2) {
    const std::vector<Run> runs = movingSlots(n, dist);
    const size_t moving = c * static_cast<size_t>(slotsIn(runs));
    // One run goes out straight from its slots; several are packed first (after the previous round's arrivals).
    Slice outgoing = slot(runs.front().begin, runs.front().count);
    if (runs.size() > 1) {
      size_t at = pack_at;
      for (const Run& run : runs) {
        previous->local.push_back(copy(slot(run.begin, run.count), scratch(at, c * static_cast<size_t>(run.count))));
        at += c * static_cast<size_t>(run.count);
      }
      outgoing = scratch(pack_at, moving);
    }
    Phase round;
    round.comm.push_back(send((r + dist) % n, outgoing));
    round.comm.push_back(recv((r - dist + n) % n, scratch(arrive_at, moving)));
    size_t at = arrive_at;
    for (const Run& run : runs) {
      round.local.push_back(copy(scratch(at, c * static_cast<size_t>(run.count)), slot(run.begin, run.count)));
      at += c * static_cast<size_t>(run.count);
    }
    previous = &s.phases.emplace_back(std::move(round));
  }
  for (int source = 0; source < n; ++source) {
    if (source == r) continue;
    previous->local.push_back(copy(slot((r - source + n) % n, 1), out(c * static_cast<size_t>(source), c)));
  }
  return s;
}

// A round per power of two below n, each one message of the moving slots; plus the copies (the rotation, packing
// and unpacking, the final placement) in the rank's memory, each a hand-off through the executor. Measured on a
// 2-core VM (bench/algorithm_compare.py): over tcp Bruck beat pairwise at 4 and 8 ranks from 0 to 32 KiB
// (0.48-0.87x the time); over shared memory, where a message costs about what a copy does, pairwise won (Bruck
// 0.9-2.0x), and so does the model. On one host over sockets (no shared-memory transport) the communicator
// prices the local link as the network's, so the model takes Bruck there as across hosts.
double bruckAllToAllSeconds(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) {
  const int n = shape.ranks;
  const double block = static_cast<double>(count * dtype_size);
  const LinkCost& link = shape.flatLink(links);
  double seconds = 0, copied = 2.0 * (n - 1) * block, copies = n + 2;
  for (int dist = 1; dist < n; dist *= 2) {
    const RoundSize round = roundSize(n, dist);
    const double moving = round.slots * block;
    seconds += link.send_overhead_s + link.transfer(moving);
    copied += (round.runs > 1 ? 2 : 1) * moving;
    copies += round.runs > 1 ? 2.0 * round.runs : round.runs;
  }
  return seconds + copies * links.memory.latency_s + copied / links.memory.bytes_per_s;
}

}  // namespace

const AlgorithmRow& bruckRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kBruck,
      .name = "bruck",
      .builders = byCollective<Builder>({{Collective::kAllToAll, bruckAllToAll}}),
      .costs = byCollective<CostFunction>({{Collective::kAllToAll, bruckAllToAllSeconds}}),
      .peers = doublingDistancePeers};
  return row;
}

}  // namespace megascale::algorithms
