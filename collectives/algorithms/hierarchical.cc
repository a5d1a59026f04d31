// Hierarchical algorithms for ranks spread over hosts (MegaScale's servers: a NIC per rail, a ToR per rail).
// Why: inside a host, ranks exchange through shared memory at memory speed; between hosts, every rank should
// drive its own NIC, and local rank b of every host talks to local rank b of the others, so the traffic of
// each rail stays on that rail's switch. Three stages:
//   1. inside each host, the data is reduced (or gathered) to B "owners" (B = the fewest ranks any host has;
//      owner b holds part b), directly: every rank sends each owner its part;
//   2. owners b of all hosts run a ring over their part: one ring per rail, all rails at once;
//   3. inside each host, the owners send the finished parts to every rank of their host.
// The data is cut into chunks that enter the stages one phase apart, so one chunk's host-local stages run
// while another crosses the network. Where a node engine serves the host (ScheduleSpec::host_steps) and every
// local rank is an owner, an all-reduce chunk's stages 1 and 3 are one shared-memory reduce-scatter and one
// all-gather of the engine (each byte crosses between processes once); all-gather and reduce-scatter, whose
// chunks are strided over the ranks' blocks, keep the transfers. Every element is reduced in one place and copied from there, so all
// ranks get bit-identical results.
#include <algorithm>

#include "collectives/algorithms/algorithms.h"
#include "collectives/host_layout.h"
#include "common/status.h"

namespace megascale::algorithms {
namespace {

using Pieces = std::vector<Slice>;  // one unit of a ring step, sent as one message per piece, in order
using Stages = std::vector<Phase>;  // one chunk's phases: the same number on every rank (some empty)

// Chunks: at most 16, of at least 64 Ki elements each (256 KiB of floats); one for small messages. With the
// executor's data flow, more chunks shorten the pipeline's fill and drain (the first chunk's gather and the last
// one's spread, when the network idles): 4 hosts x 2 rails at 64 MiB went 0.87 -> 0.92-0.95 of the link bound
// from 8 to 16 chunks; 32 lost again on all-gather (more, smaller messages through the kernel).
constexpr size_t kMaxChunks = 16;
constexpr size_t kMinChunkElements = size_t{64} << 10;

size_t totalCount(const Pieces& pieces) {
  size_t total = 0;
  for (const Slice& p : pieces) total += p.count;
  return total;
}

void sendPieces(Phase& phase, int peer, const Pieces& pieces) {
  for (const Slice& p : pieces) phase.comm.push_back(send(peer, p));
}
void recvPieces(Phase& phase, int peer, const Pieces& pieces) {
  for (const Slice& p : pieces) phase.comm.push_back(recv(peer, p));
}

// The hierarchy of one rank.
struct Place {
  const HostLayout& layout;
  int rank, host, local, owners;
  const std::vector<int>& host_ranks;  // this host's ranks
  bool host_steps;                     // the node engine can run this host's stages (ScheduleSpec::host_steps)
  bool owner() const { return local < owners; }
  /// Whether a chunk of `count` elements goes through the node engine inside the host: every local rank is an
  /// owner, and the chunk splits into equal parts (the engine's blocks).
  bool hostStepsFor(size_t count) const {
    return host_steps && owners > 1 && static_cast<int>(host_ranks.size()) == owners && count % static_cast<size_t>(owners) == 0;
  }
  int hosts() const { return layout.hosts(); }
  /// Local rank `b` of every host: the members of rail b's ring, in host order.
  std::vector<int> railMembers(int b) const {
    std::vector<int> members;
    for (const auto& ranks : layout.ranks_of) members.push_back(ranks[static_cast<size_t>(b)]);
    return members;
  }
};

Place placeOf(const ScheduleSpec& spec) {
  if (spec.hosts == nullptr || spec.hosts->ranks() != spec.nranks) {
    throw Error(ErrorCode::kInvalidArgument, std::string("hierarchical ") + collectiveName(spec.collective) +
                                                 ": the communicator's host layout is missing or covers other ranks");
  }
  const HostLayout& l = *spec.hosts;
  const int host = l.host_of[static_cast<size_t>(spec.rank)];
  return Place{l, spec.rank, host, l.local_of[static_cast<size_t>(spec.rank)], l.minRanksPerHost(),
               l.ranks_of[static_cast<size_t>(host)], spec.host_steps};
}

// In-place ring all-reduce of `region` among `members` (this rank is members[me]) in the 2(m-1) phases from
// `first`; incoming blocks land in scratch at `scratch_at`. Returns the scratch it needs.
size_t ringAllReduceInPlace(const std::vector<int>& members, int me, Slice region, size_t scratch_at, Phase* first) {
  const int m = static_cast<int>(members.size());
  const int next = members[static_cast<size_t>(mod(me + 1, m))], prev = members[static_cast<size_t>(mod(me - 1, m))];
  const auto part = [&](int b) {
    const Block blk = blockOf(region.count, m, mod(b, m));
    return Slice{region.buffer, region.offset + blk.begin, blk.count};
  };
  for (int step = 0; step < m - 1; ++step) {
    const Slice incoming = part(me - step - 1);
    const Slice arrived = scratch(scratch_at, incoming.count);
    first[step] = Phase{{send(next, part(me - step)), recv(prev, arrived)}, {reduce(incoming, arrived, incoming)}};
  }
  for (int step = 0; step < m - 1; ++step) {
    first[m - 1 + step] = Phase{{send(next, part(me + 1 - step)), recv(prev, part(me - step))}, {}};
  }
  return scratch_at + blockOf(region.count, m, 0).count;
}

// Ring all-gather among `members` in the m-1 phases from `first`: members[i] starts with blocks[i].
void ringAllGatherPieces(const std::vector<int>& members, int me, const std::vector<Pieces>& blocks, Phase* first) {
  const int m = static_cast<int>(members.size());
  const int next = members[static_cast<size_t>(mod(me + 1, m))], prev = members[static_cast<size_t>(mod(me - 1, m))];
  for (int step = 0; step < m - 1; ++step) {
    sendPieces(first[step], next, blocks[static_cast<size_t>(mod(me - step, m))]);
    recvPieces(first[step], prev, blocks[static_cast<size_t>(mod(me - step - 1, m))]);
  }
}

// In-place ring reduce-scatter among `members` over blocks of partial sums, in the m-1 phases from `first`:
// afterwards members[i] holds the sum of blocks[i]. Arrivals land contiguously in scratch at `tmp_at`.
// Returns the scratch it needs.
size_t ringReduceScatterPieces(const std::vector<int>& members, int me, const std::vector<Pieces>& blocks, size_t tmp_at,
                               Phase* first) {
  const int m = static_cast<int>(members.size());
  const int next = members[static_cast<size_t>(mod(me + 1, m))], prev = members[static_cast<size_t>(mod(me - 1, m))];
  size_t largest = 0;
  for (const Pieces& b : blocks) largest = std::max(largest, totalCount(b));
  for (int step = 0; step < m - 1; ++step) {
    sendPieces(first[step], next, blocks[static_cast<size_t>(mod(me - step - 1, m))]);
    size_t at = tmp_at;
    for (const Slice& piece : blocks[static_cast<size_t>(mod(me - step - 2, m))]) {
      first[step].comm.push_back(recv(prev, scratch(at, piece.count)));
      first[step].local.push_back(reduce(piece, scratch(at, piece.count), piece));
      at += piece.count;
    }
  }
  return tmp_at + largest;
}

// Sums this host's contributions into `into`: this rank's own `mine` first, then the others' (received in
// `theirs`, one per other local rank in local order) in local order.
void sumLocally(Phase& p, Slice mine, const std::vector<Slice>& theirs, Slice into) {
  if (theirs.empty()) {
    p.local.push_back(copy(mine, into));
    return;
  }
  p.local.push_back(reduce(mine, theirs[0], into));
  for (size_t k = 1; k < theirs.size(); ++k) p.local.push_back(reduce(into, theirs[k], into));
}

// One chunk of an all-reduce: elements [begin, begin + count) of the vector; scratch from `scratch_at`.
Stages allReduceChunk(const Place& me, size_t begin, size_t count, size_t scratch_at, size_t* scratch_end) {
  Stages st(static_cast<size_t>(2 * me.hosts()));  // gather, 2(H-1) ring phases, spread
  const auto part = [&](int b) {
    const Block blk = blockOf(count, me.owners, b);
    return out(begin + blk.begin, blk.count);
  };
  const auto input_part = [&](int b) { return Slice{kInput, part(b).offset, part(b).count}; };
  *scratch_end = scratch_at;
  if (me.hostStepsFor(count)) {  // the node engine reduce-scatters and all-gathers inside the host
    st.front().comm.push_back(hostReduceScatter(in(begin, count), part(me.local)));
    if (me.hosts() > 1) *scratch_end = ringAllReduceInPlace(me.railMembers(me.local), me.host, part(me.local), scratch_at, &st[1]);
    st.back().comm.push_back(hostAllGather(part(me.local), out(begin, count)));
    return st;
  }
  Phase& gather = st.front();
  for (int b = 0; b < me.owners; ++b) {
    if (b != me.local) gather.comm.push_back(send(me.host_ranks[static_cast<size_t>(b)], input_part(b)));
  }
  if (!me.owner()) return st;
  const size_t slot = blockOf(count, me.owners, 0).count;
  std::vector<Slice> theirs;
  for (int q = 0; q < static_cast<int>(me.host_ranks.size()); ++q) {
    if (q == me.local) continue;
    theirs.push_back(scratch(scratch_at + theirs.size() * slot, part(me.local).count));
    gather.comm.push_back(recv(me.host_ranks[static_cast<size_t>(q)], theirs.back()));
    st.back().comm.push_back(send(me.host_ranks[static_cast<size_t>(q)], part(me.local)));
  }
  sumLocally(gather, input_part(me.local), theirs, part(me.local));
  *scratch_end = scratch_at + theirs.size() * slot;
  if (me.hosts() > 1) {
    const size_t ring_end = ringAllReduceInPlace(me.railMembers(me.local), me.host, part(me.local), scratch_at, &st[1]);
    *scratch_end = std::max(*scratch_end, ring_end);
  }
  return st;
}

// The receives of an all-reduce chunk's spread (every rank gets the parts it does not own).
void allReduceChunkReceives(const Place& me, size_t begin, size_t count, Stages& st) {
  for (int b = 0; b < me.owners; ++b) {
    const Block blk = blockOf(count, me.owners, b);
    if (b != me.local) st.back().comm.push_back(recv(me.host_ranks[static_cast<size_t>(b)], out(begin + blk.begin, blk.count)));
  }
}

// One chunk of an all-gather: elements [begin, begin + count) of every rank's contribution.
Stages allGatherChunk(const Place& me, size_t c, size_t begin, size_t count) {
  Stages st(static_cast<size_t>(me.hosts() + 1));  // host exchange, H-1 ring phases, spread
  const auto slot = [&](int rank) { return out(c * static_cast<size_t>(rank) + begin, count); };
  // Owner b forwards the contributions of local ranks b, b + B, b + 2B, ... of its host.
  const auto forwarded = [&](int host, int b) {
    Pieces pieces;
    const auto& ranks = me.layout.ranks_of[static_cast<size_t>(host)];
    for (size_t j = static_cast<size_t>(b); j < ranks.size(); j += static_cast<size_t>(me.owners)) pieces.push_back(slot(ranks[j]));
    return pieces;
  };
  st.front().local.push_back(copy(in(begin, count), slot(me.rank)));
  for (int q : me.host_ranks) {
    if (q == me.rank) continue;
    st.front().comm.push_back(send(q, in(begin, count)));
    st.front().comm.push_back(recv(q, slot(q)));
  }
  if (me.hosts() == 1) return st;
  if (me.owner()) {
    std::vector<Pieces> blocks;
    for (int g = 0; g < me.hosts(); ++g) blocks.push_back(forwarded(g, me.local));
    ringAllGatherPieces(me.railMembers(me.local), me.host, blocks, &st[1]);
  }
  Phase& spread = st.back();
  for (int b = 0; b < me.owners; ++b) {
    for (int g = 0; g < me.hosts(); ++g) {
      if (g == me.host) continue;
      for (int q : me.host_ranks) {
        if (b == me.local && q != me.rank) sendPieces(spread, q, forwarded(g, b));
      }
      if (b != me.local) recvPieces(spread, me.host_ranks[static_cast<size_t>(b)], forwarded(g, b));
    }
  }
  return st;
}

// One chunk of a reduce-scatter: elements [begin, begin + count) of every rank's result block.
Stages reduceScatterChunk(const Place& me, size_t c, size_t begin, size_t count, size_t scratch_at, size_t* scratch_end) {
  const HostLayout& layout = me.layout;
  Stages st(static_cast<size_t>(me.hosts() + 1));  // gather, H-1 ring phases, spread
  // Owner b of each host handles the blocks of the ranks whose local index is b modulo B, host by host.
  const auto handled = [&](int b) {
    std::vector<int> ranks;
    for (const auto& host : layout.ranks_of) {
      for (size_t j = static_cast<size_t>(b); j < host.size(); j += static_cast<size_t>(me.owners)) ranks.push_back(host[j]);
    }
    return ranks;
  };
  const auto input_block = [&](int rank) { return in(c * static_cast<size_t>(rank) + begin, count); };
  Phase& gather = st.front();
  for (int b = 0; b < me.owners; ++b) {
    if (b == me.local) continue;
    for (int x : handled(b)) gather.comm.push_back(send(me.host_ranks[static_cast<size_t>(b)], input_block(x)));
  }
  const int my_owner = me.host_ranks[static_cast<size_t>(me.local % me.owners)];
  if (my_owner != me.rank) st.back().comm.push_back(recv(my_owner, out(begin, count)));
  *scratch_end = scratch_at;
  if (!me.owner()) return st;
  const std::vector<int> mine = handled(me.local);
  const auto sum_of = [&](size_t index) { return scratch(scratch_at + index * count, count); };  // host partial sums
  const size_t others = me.host_ranks.size() - 1, incoming_at = scratch_at + mine.size() * count;
  *scratch_end = incoming_at + others * mine.size() * count;
  std::vector<std::vector<Slice>> theirs(mine.size());
  size_t k = 0;
  for (int q : me.host_ranks) {
    if (q == me.rank) continue;
    for (size_t i = 0; i < mine.size(); ++i) {
      theirs[i].push_back(scratch(incoming_at + (k * mine.size() + i) * count, count));
      gather.comm.push_back(recv(q, theirs[i].back()));
    }
    ++k;
  }
  for (size_t i = 0; i < mine.size(); ++i) sumLocally(gather, input_block(mine[i]), theirs[i], sum_of(i));
  if (me.hosts() > 1) {
    std::vector<Pieces> blocks(static_cast<size_t>(me.hosts()));
    for (size_t i = 0; i < mine.size(); ++i) blocks[static_cast<size_t>(layout.host_of[static_cast<size_t>(mine[i])])].push_back(sum_of(i));
    *scratch_end = std::max(*scratch_end, ringReduceScatterPieces(me.railMembers(me.local), me.host, blocks, incoming_at, &st[1]));
  }
  for (size_t i = 0; i < mine.size(); ++i) {
    const int x = mine[i];
    if (layout.host_of[static_cast<size_t>(x)] != me.host) continue;
    if (x == me.rank) st.back().local.push_back(copy(sum_of(i), out(begin, count)));
    else st.back().comm.push_back(send(x, sum_of(i)));
  }
  return st;
}

// How many chunks `count` elements are cut into, and chunk k of them.
size_t chunksFor(size_t count) { return std::max<size_t>(1, std::min(kMaxChunks, count / kMinChunkElements)); }

// Chunk k enters the stages k phases after chunk 0: phase t runs stage t - k of every chunk k, chunks in order
// (so two messages between one pair in a phase are posted in the same order on both sides). Phases empty on
// this rank are dropped: a rank's phases only order its own steps.
Schedule pipelined(const std::vector<Stages>& chunks) {
  Schedule s;
  const size_t stages = chunks.empty() ? 0 : chunks.front().size();
  for (size_t t = 0; t + 1 < stages + chunks.size(); ++t) {
    Phase merged;
    for (size_t k = 0; k < chunks.size(); ++k) {
      if (t < k || t - k >= stages) continue;
      const Phase& p = chunks[k][t - k];
      merged.comm.insert(merged.comm.end(), p.comm.begin(), p.comm.end());
      merged.local.insert(merged.local.end(), p.local.begin(), p.local.end());
    }
    if (!merged.comm.empty() || !merged.local.empty()) s.phases.push_back(std::move(merged));
  }
  return s;
}

// The chunks of one collective, built by `chunk(me, begin, count, scratch_at, &scratch_end)`, pipelined;
// chunks in flight together never share scratch. Chunks start at multiples of the owners per host, so every
// chunk but the last splits into the node engine's equal blocks (Place::hostStepsFor) whatever the count: cut
// evenly, a count that is not a multiple of chunks x owners sent every chunk through the transports instead.
// The last chunk takes the remainder. The owners are the same number on every rank, so are the chunks.
template <typename ChunkBuilder>
Schedule chunked(const ScheduleSpec& spec, const ChunkBuilder& chunk) {
  const Place me = placeOf(spec);
  const size_t chunks = chunksFor(spec.count);
  const size_t align = static_cast<size_t>(std::max(me.owners, 1));
  const size_t units = spec.count / align;
  std::vector<Stages> stages;
  size_t scratch_at = 0;
  for (size_t k = 0; k < chunks; ++k) {
    const Block range = blockOf(units, static_cast<int>(chunks), static_cast<int>(k));
    const size_t begin = range.begin * align;
    const size_t count = range.count * align + (k + 1 == chunks ? spec.count % align : 0);
    size_t end = scratch_at;
    stages.push_back(chunk(me, begin, count, scratch_at, &end));
    scratch_at = end;
  }
  Schedule s = pipelined(stages);
  s.scratch_count = scratch_at;
  return s;
}

// One host, served by a node engine: the whole collective is one engine call (which picks its one-shot, slot or
// cross-memory path by size), so a single-host job runs the same executor and schedules as a cluster's.
bool engineServesWholeHost(const ScheduleSpec& spec) {
  return spec.host_steps && spec.nranks > 1 && spec.hosts != nullptr && spec.hosts->hosts() == 1 &&
         spec.hosts->ranks() == spec.nranks;
}

Schedule oneHostStep(const Step& step, Slice result) {
  Schedule s;
  s.phases.push_back(Phase{{step}, {}});
  s.result = result;
  return s;
}

Schedule hierarchicalAllReduce(const ScheduleSpec& spec) {
  if (spec.nranks == 1) return singleRankReduction(spec.count);
  if (engineServesWholeHost(spec)) return oneHostStep(hostAllReduce(in(0, spec.count), out(0, spec.count)), out(0, spec.count));
  Schedule s = chunked(spec, [](const Place& me, size_t begin, size_t count, size_t scratch_at, size_t* end) {
    Stages st = allReduceChunk(me, begin, count, scratch_at, end);
    if (!me.hostStepsFor(count)) allReduceChunkReceives(me, begin, count, st);
    return st;
  });
  s.result = out(0, spec.count);
  return s;
}

Schedule hierarchicalAllGather(const ScheduleSpec& spec) {
  if (engineServesWholeHost(spec)) {
    return oneHostStep(hostAllGather(in(0, spec.count), out(0, spec.count * static_cast<size_t>(spec.nranks))), out(0, 0));
  }
  return chunked(spec, [&](const Place& me, size_t begin, size_t count, size_t scratch_at, size_t* end) {
    *end = scratch_at;
    return allGatherChunk(me, spec.count, begin, count);
  });
}

Schedule hierarchicalReduceScatter(const ScheduleSpec& spec) {
  if (spec.nranks == 1) return singleRankReduction(spec.count);
  if (engineServesWholeHost(spec)) {
    return oneHostStep(hostReduceScatter(in(0, spec.count * static_cast<size_t>(spec.nranks)), out(0, spec.count)),
                       out(0, spec.count));
  }
  Schedule s = chunked(spec, [&](const Place& me, size_t begin, size_t count, size_t scratch_at, size_t* end) {
    return reduceScatterChunk(me, spec.count, begin, count, scratch_at, end);
  });
  s.result = out(0, spec.count);
  return s;
}

// Reduce to the l owners and spread back inside the host; a ring of h per rail over bytes / l.
double hierarchicalAllReduceSeconds(const ClusterShape& shape, const LinkCosts& links, size_t count,
                                    size_t dtype_size) {
  const int h = shape.hosts, l = shape.ranks_per_host;
  if (h <= 1 || l <= 1) return kNever;
  const double bytes = static_cast<double>(count * dtype_size);
  const double inside = 2 * links.local.transfer(bytes * (l - 1) / l);
  return inside + 2.0 * (h - 1) * links.network.transfer(bytes / l / h);
}

}  // namespace

// Below 256 KiB per rank the hierarchy's extra intra-host stages cost more latency than they save (measured on
// the emulated cluster); from there on it is taken wherever several hosts hold several ranks. On one host with a
// node engine it is the engine's own collective, taken at every size.
const AlgorithmRow& hierarchicalRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kHierarchical,
      .name = "hier",
      .builders = byCollective<Builder>({{Collective::kAllReduce, hierarchicalAllReduce},
                                         {Collective::kAllGather, hierarchicalAllGather},
                                         {Collective::kReduceScatter, hierarchicalReduceScatter}}),
      .costs = byCollective<CostFunction>({{Collective::kAllReduce, hierarchicalAllReduceSeconds}}),
      .preferred_from_bytes = size_t{256} << 10,
      .whole_host_for = collectiveBit(Collective::kAllReduce) | collectiveBit(Collective::kAllGather) |
                        collectiveBit(Collective::kReduceScatter)};
  return row;
}

}  // namespace megascale::algorithms
