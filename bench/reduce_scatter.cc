// reduce_scatter_perf: count is per rank (the result); busbw = algbw * (n-1)/n.
#include "bench/perf_test.h"

namespace mb = megascale::bench;

int main(int argc, char** argv) {
  mb::CollectiveTest test{
      "reduce_scatter_perf", true, false, true,
      [](size_t bytes, size_t es, int n, int rank) {
        size_t c = bytes / es / n;
        return mb::Geometry{c, c * n, c, c * n, 0, c * rank};
      },
      [](int n) { return static_cast<double>(n - 1) / n; },
      [](const mb::Geometry& g, size_t es, int n) { return static_cast<double>(g.count * es * n); },
      [](const mb::Geometry& g, int rank, int n, int, mscRedOp_t op, size_t i, int seed, bool*) {
        return mb::reducedValue(n, g.count * rank + i, seed, op);
      },
      [](const void* s, void* r, const mb::Geometry& g, mscDataType_t t, mscRedOp_t op, int, mscComm_t comm) {
        return mscReduceScatter(s, r, g.count, t, op, comm);
      }};
  return mb::runPerfTest(test, argc, argv);
}
