// Ring algorithms. Why a ring: every rank sends and receives exactly (n-1)/n of the data per pass over one
// link each way, which is bandwidth-optimal; the cost is 2(n-1) latency-bound steps for all-reduce, so the
// ring is the choice for large messages. Block b of the vector travels the ring, being reduced as it goes.
#include <algorithm>

#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

namespace {

// Reduce-scatter pass in the output buffer, then an all-gather pass. Step s of the first pass: send block
// r-s (the first time straight from the input), receive block r-s-1 and fold it into the output. After n-1
// steps rank r holds block r+1 complete; the second pass circulates the complete blocks.
Schedule ringAllReduce(const ScheduleSpec& spec) {
  const int n = spec.nranks, r = spec.rank;
  if (n == 1) return singleRankReduction(spec.count);
  Schedule s;
  s.result = out(0, spec.count);
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  s.scratch_count = blockOf(spec.count, n, 0).count;  // block 0 is the largest
  for (int step = 0; step < n - 1; ++step) {
    Block send_block = blockOf(spec.count, n, mod(r - step, n));
    Block recv_block = blockOf(spec.count, n, mod(r - step - 1, n));
    Slice source = step == 0 ? in(send_block.begin, send_block.count) : out(send_block.begin, send_block.count);
    Phase p;
    p.comm = {send(next, source), recv(prev, scratch(0, recv_block.count))};
    p.local = {reduce(in(recv_block.begin, recv_block.count), scratch(0, recv_block.count),
                      out(recv_block.begin, recv_block.count))};
    s.phases.push_back(std::move(p));
  }
  for (int step = 0; step < n - 1; ++step) {
    Block send_block = blockOf(spec.count, n, mod(r + 1 - step, n));
    Block recv_block = blockOf(spec.count, n, mod(r - step, n));
    s.phases.push_back(Phase{{send(next, out(send_block.begin, send_block.count)),
                              recv(prev, out(recv_block.begin, recv_block.count))},
                             {}});
  }
  return s;
}

// Pipelined ring: the vector cut into K sections, each a ring all-reduce of its own, their phases taken in turn
// (section k's step s is phase s*K + k). Why: a ring step's reduction waits for its transfer and the next
// transfer waits for the reduction; with K sections in flight, the executor posts section k+1's transfer (it
// touches none of section k's bytes) before reducing section k, so the reductions run while the next chunk
// crosses the link. The price is K times the ring's 2(n-1) latencies, so it is for large messages.
Schedule pipelinedRingAllReduce(const ScheduleSpec& spec) {
  constexpr size_t kMaxSections = 4;
  constexpr size_t kMinSectionElements = size_t{256} << 10;  // 1 MiB of floats
  const size_t sections = std::clamp<size_t>(spec.count / kMinSectionElements, 1, kMaxSections);
  if (spec.nranks == 1 || sections == 1) return ringAllReduce(spec);
  Schedule s;
  s.result = out(0, spec.count);
  for (size_t k = 0; k < sections; ++k) {
    const Block section = blockOf(spec.count, static_cast<int>(sections), static_cast<int>(k));
    ScheduleSpec part = spec;
    part.count = section.count;
    Schedule ring = ringAllReduce(part);
    const size_t scratch_at = s.scratch_count;
    const auto shift = [&](Slice& x) { x.offset += x.buffer == kScratch ? scratch_at : section.begin; };
    if (s.phases.empty()) s.phases.resize(ring.phases.size() * sections);
    for (size_t p = 0; p < ring.phases.size(); ++p) {
      for (Step& step : ring.phases[p].comm) shift(step.kind == Step::kSend ? step.a : step.dst);
      for (Step& step : ring.phases[p].local) {
        shift(step.a);
        shift(step.dst);
        if (step.kind == Step::kReduce) shift(step.b);
      }
      s.phases[p * sections + k] = std::move(ring.phases[p]);
    }
    s.scratch_count += ring.scratch_count;
  }
  return s;
}

// Each rank's contribution enters the output at its block, then n-1 steps pass blocks along the ring.
Schedule ringAllGather(const ScheduleSpec& spec) {
  const int n = spec.nranks, r = spec.rank;
  const size_t c = spec.count;
  Schedule s;
  s.phases.push_back(copyPhase(in(0, c), out(c * r, c)));
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  for (int step = 0; step < n - 1; ++step) {
    size_t send_block = static_cast<size_t>(mod(r - step, n)), recv_block = static_cast<size_t>(mod(r - step - 1, n));
    s.phases.push_back(Phase{{send(next, out(c * send_block, c)), recv(prev, out(c * recv_block, c))}, {}});
  }
  return s;
}

// Step s: send the partial sum of block r-s-1 (first from the input), receive the partial sum of block
// r-s-2 and add this rank's input block to it. The last step lands block r, complete, in the output.
Schedule ringReduceScatter(const ScheduleSpec& spec) {
  const int n = spec.nranks, r = spec.rank;
  const size_t c = spec.count;
  if (n == 1) return singleRankReduction(c);
  Schedule s;
  s.result = out(0, c);
  const int next = mod(r + 1, n), prev = mod(r - 1, n);
  s.scratch_count = 2 * c;  // [0, c): partial sum being passed on; [c, 2c): the one arriving
  for (int step = 0; step < n - 1; ++step) {
    size_t send_block = static_cast<size_t>(mod(r - step - 1, n)), recv_block = static_cast<size_t>(mod(r - step - 2, n));
    Slice source = step == 0 ? in(c * send_block, c) : scratch(0, c);
    Slice target = step == n - 2 ? out(0, c) : scratch(0, c);
    s.phases.push_back(Phase{{send(next, source), recv(prev, scratch(c, c))},
                             {reduce(in(c * recv_block, c), scratch(c, c), target)}});
  }
  return s;
}

double ringAllReduceSeconds(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) {
  const int n = shape.ranks;
  return 2.0 * (n - 1) * shape.flatLink(links).transfer(static_cast<double>(count * dtype_size) / n);
}

int ringPeers(int nranks) { return std::min(nranks - 1, 2); }

}  // namespace

const AlgorithmRow& ringRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kRing,
      .name = "ring",
      .builders = byCollective<Builder>({{Collective::kAllReduce, ringAllReduce},
                                         {Collective::kAllGather, ringAllGather},
                                         {Collective::kReduceScatter, ringReduceScatter}}),
      .costs = byCollective<CostFunction>({{Collective::kAllReduce, ringAllReduceSeconds}}),
      .default_for = collectiveBit(Collective::kAllReduce) | collectiveBit(Collective::kAllGather) |
                     collectiveBit(Collective::kReduceScatter),
      .peers = ringPeers};
  return row;
}

// Unpriced: what it gains, reductions hidden behind transfers, is compute the alpha-beta model does not price;
// the tuning table takes it where it measured faster.
const AlgorithmRow& pipelinedRingRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kPipelinedRing,
      .name = "pring",
      .builders = byCollective<Builder>({{Collective::kAllReduce, pipelinedRingAllReduce}}),
      .peers = ringPeers};
  return row;
}

}  // namespace megascale::algorithms
