// reduce_perf: busbw = algbw; only the root's output is checked.
#include "bench/perf_test.h"

namespace mb = megascale::bench;

int main(int argc, char** argv) {
  mb::CollectiveTest test{
      "reduce_perf", true, true, true,
      [](size_t bytes, size_t es, int, int) {
        size_t c = bytes / es;
        return mb::Geometry{c, c, c, c, 0, 0};
      },
      [](int) { return 1.0; },
      [](const mb::Geometry& g, size_t es, int) { return static_cast<double>(g.count * es); },
      [](const mb::Geometry&, int rank, int n, int root, mscRedOp_t op, size_t i, int seed, bool* defined) {
        *defined = rank == root;
        return mb::reducedValue(n, i, seed, op);
      },
      [](const void* s, void* r, const mb::Geometry& g, mscDataType_t t, mscRedOp_t op, int root, mscComm_t comm) {
        return mscReduce(s, r, g.count, t, op, root, comm);
      }};
  return mb::runPerfTest(test, argc, argv);
}
