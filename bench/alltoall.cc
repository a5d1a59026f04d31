// alltoall_perf: count is per peer; busbw = algbw * (n-1)/n.
#include "bench/perf_test.h"

namespace mb = megascale::bench;

int main(int argc, char** argv) {
  mb::CollectiveTest test{
      "alltoall_perf", false, false, true,
      [](size_t bytes, size_t es, int n, int) {
        size_t c = bytes / es / n;
        return mb::Geometry{c, c * n, c * n, c * n, 0, 0};
      },
      [](int n) { return static_cast<double>(n - 1) / n; },
      [](const mb::Geometry& g, size_t es, int n) { return static_cast<double>(g.count * es * n); },
      [](const mb::Geometry& g, int rank, int, int, mscRedOp_t op, size_t i, int seed, bool*) {
        return mb::inputValue(static_cast<int>(i / g.count), g.count * rank + i % g.count, seed, op);
      },
      [](const void* s, void* r, const mb::Geometry& g, mscDataType_t t, mscRedOp_t, int, mscComm_t comm) {
        return mscAllToAll(s, r, g.count, t, comm);
      }};
  return mb::runPerfTest(test, argc, argv);
}
