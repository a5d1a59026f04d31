// all_gather_perf: count is per rank; size is the gathered buffer; busbw = algbw * (n-1)/n.
#include "bench/perf_test.h"

namespace mb = megascale::bench;

int main(int argc, char** argv) {
  mb::CollectiveTest test{
      "all_gather_perf", false, false, true,
      [](size_t bytes, size_t es, int n, int rank) {
        size_t c = bytes / es / n;
        return mb::Geometry{c, c, c * n, c * n, c * rank, 0};
      },
      [](int n) { return static_cast<double>(n - 1) / n; },
      [](const mb::Geometry& g, size_t es, int n) { return static_cast<double>(g.count * es * n); },
      [](const mb::Geometry& g, int, int, int, mscRedOp_t op, size_t i, int seed, bool*) {
        return mb::inputValue(static_cast<int>(i / g.count), i % g.count, seed, op);
      },
      [](const void* s, void* r, const mb::Geometry& g, mscDataType_t t, mscRedOp_t, int, mscComm_t comm) {
        return mscAllGather(s, r, g.count, t, comm);
      }};
  return mb::runPerfTest(test, argc, argv);
}
