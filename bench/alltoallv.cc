// alltoallv_perf: all-to-all with unequal blocks (mscAllToAllv), skewed as a mixture of experts routes tokens:
// rank r sends rank p a block of count x w(r, p) elements, w = (r + 2p + 1) mod 3 in {0, 1, 2} (empty blocks
// included; every rank keeps count elements for itself). "count" is the mean block; algbw counts count x n
// elements per rank, as alltoall_perf does, and busbw = algbw * (n-1)/n.
#include <vector>

#include "bench/perf_test.h"

namespace mb = megascale::bench;

namespace {

size_t weight(int from, int to) { return static_cast<size_t>((from + 2 * to + 1) % 3); }

// Where rank `from`'s block for rank `to` starts in its send buffer, and rank `to`'s block from `from` in its
// receive buffer (prefix sums of the blocks before them), in elements.
size_t sendOffset(size_t count, int from, int to) {
  size_t at = 0;
  for (int p = 0; p < to; ++p) at += count * weight(from, p);
  return at;
}
size_t recvOffset(size_t count, int to, int from) {
  size_t at = 0;
  for (int p = 0; p < from; ++p) at += count * weight(p, to);
  return at;
}

}  // namespace

int main(int argc, char** argv) {
  mb::CollectiveTest test{
      "alltoallv_perf", false, false, false,
      [](size_t bytes, size_t es, int n, int rank) {
        const size_t c = bytes / es / n;
        return mb::Geometry{c, sendOffset(c, rank, n), recvOffset(c, rank, n), 0, 0, 0};
      },
      [](int n) { return static_cast<double>(n - 1) / n; },
      [](const mb::Geometry& g, size_t es, int n) { return static_cast<double>(g.count * es * n); },
      [](const mb::Geometry& g, int rank, int n, int, mscRedOp_t op, size_t i, int seed, bool*) {
        int from = 0;
        while (from + 1 < n && recvOffset(g.count, rank, from + 1) <= i) ++from;
        const size_t within = i - recvOffset(g.count, rank, from);
        return mb::inputValue(from, sendOffset(g.count, from, rank) + within, seed, op);
      },
      [](const void* s, void* r, const mb::Geometry& g, mscDataType_t t, mscRedOp_t, int, mscComm_t comm) {
        int rank = 0, n = 0;
        mscCommUserRank(comm, &rank);
        mscCommCount(comm, &n);
        std::vector<size_t> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
        for (int p = 0; p < n; ++p) {
          send_counts[p] = g.count * weight(rank, p);
          send_displs[p] = sendOffset(g.count, rank, p);
          recv_counts[p] = g.count * weight(p, rank);
          recv_displs[p] = recvOffset(g.count, rank, p);
        }
        return mscAllToAllv(s, send_counts.data(), send_displs.data(), r, recv_counts.data(), recv_displs.data(), t,
                            comm);
      }};
  return mb::runPerfTest(test, argc, argv);
}
