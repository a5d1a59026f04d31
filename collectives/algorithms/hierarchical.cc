// Hierarchical algorithms for ranks spread over hosts (MegaScale's servers: a NIC per rail, a ToR per rail).
// Why: inside a host, ranks exchange through shared memory at memory speed; between hosts, every rank should
// drive its own NIC, and local rank b of every host talks to local rank b of the others, so the traffic of
// each rail stays on that rail's switch. Three stages:
//   1. inside each host, the vector is reduced (or gathered) to B "owners" (B = the fewest ranks any host has;
//      owner b holds part b), directly: every rank sends each owner its part;
//   2. owners b of all hosts run a ring over their part: one ring per rail, all rails at once;
//   3. inside each host, the owners send the finished parts to every rank of their host.
// Every element is reduced in one place and copied from there, so all ranks get bit-identical results.
#include "collectives/algorithms/algorithms.h"
#include "collectives/host_layout.h"
#include "common/status.h"

namespace megascale::algorithms {
namespace {

using Pieces = std::vector<Slice>;  // one unit of a ring step, sent as one message per piece, in order

int mod(int a, int n) { return ((a % n) + n) % n; }

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

void needScratch(Schedule& s, size_t count) { s.scratch_count = std::max(s.scratch_count, count); }

// The hierarchy of one rank.
struct Place {
  const HostLayout& layout;
  int rank, host, local, owners;
  const std::vector<int>& host_ranks;  // this host's ranks
  bool owner() const { return local < owners; }
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
               l.ranks_of[static_cast<size_t>(host)]};
}

// In-place ring all-reduce of `region` of the output among `members` (this rank is members[me]); incoming
// blocks land in scratch at `scratch_at`.
void ringAllReduceInPlace(const std::vector<int>& members, int me, Slice region, size_t scratch_at, Schedule& s) {
  const int m = static_cast<int>(members.size());
  if (m == 1) return;
  const int next = members[static_cast<size_t>(mod(me + 1, m))], prev = members[static_cast<size_t>(mod(me - 1, m))];
  const auto part = [&](int b) {
    const Block blk = blockOf(region.count, m, mod(b, m));
    return Slice{region.buffer, region.offset + blk.begin, blk.count};
  };
  needScratch(s, scratch_at + blockOf(region.count, m, 0).count);
  for (int step = 0; step < m - 1; ++step) {
    const Slice incoming = part(me - step - 1);
    const Slice arrived = scratch(scratch_at, incoming.count);
    s.phases.push_back(Phase{{send(next, part(me - step)), recv(prev, arrived)}, {reduce(incoming, arrived, incoming)}});
  }
  for (int step = 0; step < m - 1; ++step) {
    s.phases.push_back(Phase{{send(next, part(me + 1 - step)), recv(prev, part(me - step))}, {}});
  }
}

// Ring all-gather among `members`: members[i] starts with blocks[i] and ends with all of them.
void ringAllGatherPieces(const std::vector<int>& members, int me, const std::vector<Pieces>& blocks, Schedule& s) {
  const int m = static_cast<int>(members.size());
  const int next = members[static_cast<size_t>(mod(me + 1, m))], prev = members[static_cast<size_t>(mod(me - 1, m))];
  for (int step = 0; step < m - 1; ++step) {
    Phase p;
    sendPieces(p, next, blocks[static_cast<size_t>(mod(me - step, m))]);
    recvPieces(p, prev, blocks[static_cast<size_t>(mod(me - step - 1, m))]);
    s.phases.push_back(std::move(p));
  }
}

// In-place ring reduce-scatter among `members` over blocks of partial sums: afterwards members[i] holds the
// sum of blocks[i]. What arrives is laid out contiguously in scratch at `tmp_at`.
void ringReduceScatterPieces(const std::vector<int>& members, int me, const std::vector<Pieces>& blocks, size_t tmp_at,
                             Schedule& s) {
  const int m = static_cast<int>(members.size());
  const int next = members[static_cast<size_t>(mod(me + 1, m))], prev = members[static_cast<size_t>(mod(me - 1, m))];
  size_t largest = 0;
  for (const Pieces& b : blocks) largest = std::max(largest, totalCount(b));
  needScratch(s, tmp_at + largest);
  for (int step = 0; step < m - 1; ++step) {
    Phase p;
    sendPieces(p, next, blocks[static_cast<size_t>(mod(me - step - 1, m))]);
    size_t at = tmp_at;
    for (const Slice& piece : blocks[static_cast<size_t>(mod(me - step - 2, m))]) {
      p.comm.push_back(recv(prev, scratch(at, piece.count)));
      p.local.push_back(reduce(piece, scratch(at, piece.count), piece));
      at += piece.count;
    }
    s.phases.push_back(std::move(p));
  }
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

void pushIfAny(Schedule& s, Phase&& p) {
  if (!p.comm.empty() || !p.local.empty()) s.phases.push_back(std::move(p));
}

}  // namespace

Schedule hierarchicalAllReduce(const ScheduleSpec& spec) {
  if (spec.nranks == 1) return singleRankReduction(spec.count);
  const Place me = placeOf(spec);
  const size_t n = spec.count;
  const auto part = [&](int b) {
    const Block blk = blockOf(n, me.owners, b);
    return out(blk.begin, blk.count);
  };
  const auto input_part = [&](int b) { return Slice{kInput, part(b).offset, part(b).count}; };
  Schedule s;
  s.result = out(0, n);
  const int local_ranks = static_cast<int>(me.host_ranks.size());
  Phase gather;
  for (int b = 0; b < me.owners; ++b) {
    if (b != me.local) gather.comm.push_back(send(me.host_ranks[static_cast<size_t>(b)], input_part(b)));
  }
  if (me.owner()) {
    const size_t slot = blockOf(n, me.owners, 0).count;
    std::vector<Slice> theirs;
    for (int q = 0; q < local_ranks; ++q) {
      if (q == me.local) continue;
      theirs.push_back(scratch(theirs.size() * slot, part(me.local).count));
      gather.comm.push_back(recv(me.host_ranks[static_cast<size_t>(q)], theirs.back()));
    }
    needScratch(s, theirs.size() * slot);
    sumLocally(gather, input_part(me.local), theirs, part(me.local));
  }
  pushIfAny(s, std::move(gather));
  if (me.owner()) ringAllReduceInPlace(me.railMembers(me.local), me.host, part(me.local), 0, s);
  Phase spread;
  for (int q = 0; q < local_ranks && me.owner(); ++q) {
    if (q != me.local) spread.comm.push_back(send(me.host_ranks[static_cast<size_t>(q)], part(me.local)));
  }
  for (int b = 0; b < me.owners; ++b) {
    if (b != me.local) spread.comm.push_back(recv(me.host_ranks[static_cast<size_t>(b)], part(b)));
  }
  pushIfAny(s, std::move(spread));
  return s;
}

Schedule hierarchicalAllGather(const ScheduleSpec& spec) {
  const Place me = placeOf(spec);
  const size_t c = spec.count;
  const auto slot = [&](int rank) { return out(c * static_cast<size_t>(rank), c); };
  // Owner b forwards the slots of local ranks b, b + B, b + 2B, ... of its host.
  const auto forwarded = [&](int host, int b) {
    Pieces pieces;
    const auto& ranks = me.layout.ranks_of[static_cast<size_t>(host)];
    for (size_t j = static_cast<size_t>(b); j < ranks.size(); j += static_cast<size_t>(me.owners)) pieces.push_back(slot(ranks[j]));
    return pieces;
  };
  Schedule s;
  Phase local_exchange{{}, {copy(in(0, c), slot(me.rank))}};
  for (int q : me.host_ranks) {
    if (q == me.rank) continue;
    local_exchange.comm.push_back(send(q, in(0, c)));
    local_exchange.comm.push_back(recv(q, slot(q)));
  }
  s.phases.push_back(std::move(local_exchange));
  const int hosts = me.layout.hosts();
  if (hosts == 1) return s;
  if (me.owner()) {
    std::vector<Pieces> blocks;
    for (int g = 0; g < hosts; ++g) blocks.push_back(forwarded(g, me.local));
    ringAllGatherPieces(me.railMembers(me.local), me.host, blocks, s);
  }
  Phase spread;
  for (int b = 0; b < me.owners; ++b) {
    for (int g = 0; g < hosts; ++g) {
      if (g == me.host) continue;
      for (int q : me.host_ranks) {
        if (b == me.local && q != me.rank) sendPieces(spread, q, forwarded(g, b));
      }
      if (b != me.local) recvPieces(spread, me.host_ranks[static_cast<size_t>(b)], forwarded(g, b));
    }
  }
  pushIfAny(s, std::move(spread));
  return s;
}

Schedule hierarchicalReduceScatter(const ScheduleSpec& spec) {
  const size_t c = spec.count;
  if (spec.nranks == 1) return singleRankReduction(c);
  const Place me = placeOf(spec);
  const HostLayout& layout = me.layout;
  // Owner b of each host handles the blocks of the ranks whose local index is b modulo B, host by host.
  const auto handled = [&](int b) {
    std::vector<int> ranks;
    for (const auto& host : layout.ranks_of) {
      for (size_t j = static_cast<size_t>(b); j < host.size(); j += static_cast<size_t>(me.owners)) ranks.push_back(host[j]);
    }
    return ranks;
  };
  const auto input_block = [&](int rank) { return in(c * static_cast<size_t>(rank), c); };
  Schedule s;
  s.result = out(0, c);
  Phase gather;
  for (int b = 0; b < me.owners; ++b) {
    if (b == me.local) continue;
    for (int x : handled(b)) gather.comm.push_back(send(me.host_ranks[static_cast<size_t>(b)], input_block(x)));
  }
  const std::vector<int> mine = me.owner() ? handled(me.local) : std::vector<int>{};
  const auto sum_of = [&](size_t index) { return scratch(index * c, c); };  // this host's partial sums
  if (me.owner()) {
    const size_t others = me.host_ranks.size() - 1, incoming_at = mine.size() * c;
    needScratch(s, incoming_at + others * mine.size() * c);
    std::vector<std::vector<Slice>> theirs(mine.size());
    size_t k = 0;
    for (int q : me.host_ranks) {
      if (q == me.rank) continue;
      for (size_t i = 0; i < mine.size(); ++i) {
        theirs[i].push_back(scratch(incoming_at + (k * mine.size() + i) * c, c));
        gather.comm.push_back(recv(q, theirs[i].back()));
      }
      ++k;
    }
    for (size_t i = 0; i < mine.size(); ++i) sumLocally(gather, input_block(mine[i]), theirs[i], sum_of(i));
  }
  pushIfAny(s, std::move(gather));
  if (me.owner() && layout.hosts() > 1) {
    std::vector<Pieces> blocks(static_cast<size_t>(layout.hosts()));
    for (size_t i = 0; i < mine.size(); ++i) blocks[static_cast<size_t>(layout.host_of[static_cast<size_t>(mine[i])])].push_back(sum_of(i));
    ringReduceScatterPieces(me.railMembers(me.local), me.host, blocks, mine.size() * c, s);
  }
  Phase spread;
  for (size_t i = 0; i < mine.size(); ++i) {
    const int x = mine[i];
    if (layout.host_of[static_cast<size_t>(x)] != me.host) continue;
    if (x == me.rank) spread.local.push_back(copy(sum_of(i), out(0, c)));
    else spread.comm.push_back(send(x, sum_of(i)));
  }
  const int my_owner = me.host_ranks[static_cast<size_t>(me.local % me.owners)];
  if (my_owner != me.rank) spread.comm.push_back(recv(my_owner, out(0, c)));
  pushIfAny(s, std::move(spread));
  return s;
}

}  // namespace megascale::algorithms
