// Recursive halving-doubling all-reduce (Rabenseifner). Why: log2(n) rounds instead of the ring's 2(n-1),
// while each rank still moves only about 2(n-1)/n of the data, so mid-size messages win. Round k of the
// halving pass exchanges half of the current range with the rank at distance 2^k and keeps reducing the half
// it owns; the doubling pass mirrors it to gather the owned blocks back. With n not a power of two, the first
// 2*(n - p) ranks pair up: the even one hands its vector to the odd one before and gets the result after.
#include <cmath>

#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

namespace {

struct Folding {
  int p2;    // ranks taking part in halving-doubling
  int rest;  // n - p2: ranks folded into a partner
  // virtual rank -> real rank
  int real(int vr) const { return vr < rest ? 2 * vr + 1 : vr + rest; }
};

Schedule halvingDoublingAllReduce(const ScheduleSpec& spec) {
  const int n = spec.nranks, r = spec.rank;
  const size_t count = spec.count;
  Schedule s;
  s.result = out(0, count);
  s.phases.push_back(copyPhase(in(0, count), out(0, count)));
  if (n == 1) return s;
  Folding f{largestPowerOfTwoAtMost(n), n - largestPowerOfTwoAtMost(n)};
  const Slice whole = out(0, count);
  const bool folded_away = r < 2 * f.rest && r % 2 == 0;
  if (r < 2 * f.rest) {
    if (folded_away) {
      s.phases.push_back(Phase{{send(r + 1, whole)}, {}});
      s.phases.push_back(Phase{{recv(r + 1, whole)}, {}});
      return s;
    }
    s.scratch_count = count;
    s.phases.push_back(Phase{{recv(r - 1, scratch(0, count))}, {reduce(whole, scratch(0, count), whole)}});
  }
  const int vr = r < 2 * f.rest ? r / 2 : r - f.rest;
  // The largest half ever received is the first round's lower half (the bigger blocks come first).
  s.scratch_count = std::max(s.scratch_count, blockOf(count, f.p2, f.p2 / 2).begin);
  // Halving: the owned range [lo, hi) of the p2 blocks shrinks by half each round.
  int lo = 0, hi = f.p2;
  for (int mask = f.p2 / 2; mask >= 1; mask /= 2) {
    int partner = f.real(vr ^ mask);
    int mid = lo + (hi - lo) / 2;
    bool keep_low = (vr & mask) == 0;
    int keep_lo = keep_low ? lo : mid, keep_hi = keep_low ? mid : hi;
    int give_lo = keep_low ? mid : lo, give_hi = keep_low ? hi : mid;
    Block keep_first = blockOf(count, f.p2, keep_lo), keep_last = blockOf(count, f.p2, keep_hi - 1);
    Block give_first = blockOf(count, f.p2, give_lo), give_last = blockOf(count, f.p2, give_hi - 1);
    size_t keep_begin = keep_first.begin, keep_count = keep_last.begin + keep_last.count - keep_begin;
    size_t give_begin = give_first.begin, give_count = give_last.begin + give_last.count - give_begin;
    s.phases.push_back(Phase{{send(partner, out(give_begin, give_count)), recv(partner, scratch(0, keep_count))},
                             {reduce(out(keep_begin, keep_count), scratch(0, keep_count), out(keep_begin, keep_count))}});
    lo = keep_lo;
    hi = keep_hi;
  }
  // Doubling: send the owned range, receive the partner's adjacent range of the same size.
  for (int mask = 1; mask < f.p2; mask *= 2) {
    int partner = f.real(vr ^ mask);
    int width = hi - lo;
    int partner_lo = (vr & mask) == 0 ? lo + width : lo - width;
    Block mine_first = blockOf(count, f.p2, lo), mine_last = blockOf(count, f.p2, hi - 1);
    Block theirs_first = blockOf(count, f.p2, partner_lo), theirs_last = blockOf(count, f.p2, partner_lo + width - 1);
    s.phases.push_back(Phase{{send(partner, out(mine_first.begin, mine_last.begin + mine_last.count - mine_first.begin)),
                              recv(partner, out(theirs_first.begin,
                                                theirs_last.begin + theirs_last.count - theirs_first.begin))},
                             {}});
    lo = std::min(lo, partner_lo);
    hi = lo + 2 * width;
  }
  if (r < 2 * f.rest) s.phases.push_back(Phase{{send(r - 1, whole)}, {}});
  return s;
}

// Its rounds pair every rank with a far partner at once, so across hosts all of its flows cross the fabric
// together and collide under ECMP hashing. The simulator's 12,288-GPU rails (Swift, 128 MiB per rail) took 2.2x
// the bandwidth term; this is the cost model's only contention term (docs/congestion.md).
constexpr double kFarPartnerCollision = 2.0;

double halvingDoublingAllReduceSeconds(const ClusterShape& shape, const LinkCosts& links, size_t count,
                                       size_t dtype_size) {
  const int n = shape.ranks;
  const LinkCost& link = shape.flatLink(links);
  const double bytes = static_cast<double>(count * dtype_size);
  const int p = largestPowerOfTwoAtMost(n);
  const double rounds = std::log2(p);
  const double fold = n > p ? 2 * link.transfer(bytes) : 0;  // the extra ranks hand over and take back
  const double collision = shape.hosts > 1 ? kFarPartnerCollision : 1;
  return fold + 2 * rounds * link.latency_s + collision * 2.0 * (p - 1) / p * bytes / link.bytes_per_s;
}

int halvingDoublingPeers(int nranks) {
  const int p = largestPowerOfTwoAtMost(nranks);
  return static_cast<int>(std::log2(p)) + (nranks > p ? 1 : 0);
}

}  // namespace

const AlgorithmRow& halvingDoublingRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kRecursiveHalvingDoubling,
      .name = "rhd",
      .builders = byCollective<Builder>({{Collective::kAllReduce, halvingDoublingAllReduce}}),
      .costs = byCollective<CostFunction>({{Collective::kAllReduce, halvingDoublingAllReduceSeconds}}),
      .peers = halvingDoublingPeers};
  return row;
}

}  // namespace megascale::algorithms
