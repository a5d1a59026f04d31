// all_reduce_perf: busbw = algbw * 2(n-1)/n (each element crosses 2(n-1) of n links in the optimal schedule).
#include "bench/perf_test.h"

namespace mb = megascale::bench;

int main(int argc, char** argv) {
  mb::CollectiveTest test{
      "all_reduce_perf", true, false, true,
      [](size_t bytes, size_t es, int, int) {
        size_t c = bytes / es;
        return mb::Geometry{c, c, c, c, 0, 0};
      },
      [](int n) { return 2.0 * (n - 1) / n; },
      [](const mb::Geometry& g, size_t es, int) { return static_cast<double>(g.count * es); },
      [](const mb::Geometry&, int, int n, int, mscRedOp_t op, size_t i, int seed, bool*) {
        return mb::reducedValue(n, i, seed, op);
      },
      [](const void* s, void* r, const mb::Geometry& g, mscDataType_t t, mscRedOp_t op, int, mscComm_t comm) {
        return mscAllReduce(s, r, g.count, t, op, comm);
      }};
  return mb::runPerfTest(test, argc, argv);
}
