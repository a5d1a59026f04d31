// broadcast_perf: busbw = algbw (the root's one link carries every byte once).
#include "bench/perf_test.h"

namespace mb = megascale::bench;

int main(int argc, char** argv) {
  mb::CollectiveTest test{
      "broadcast_perf", false, true, true,
      [](size_t bytes, size_t es, int, int) {
        size_t c = bytes / es;
        return mb::Geometry{c, c, c, c, 0, 0};
      },
      [](int) { return 1.0; },
      [](const mb::Geometry& g, size_t es, int) { return static_cast<double>(g.count * es); },
      [](const mb::Geometry&, int, int, int root, mscRedOp_t op, size_t i, int seed, bool*) {
        return mb::inputValue(root, i, seed, op);
      },
      [](const void* s, void* r, const mb::Geometry& g, mscDataType_t t, mscRedOp_t, int root, mscComm_t comm) {
        return mscBroadcast(s, r, g.count, t, root, comm);
      }};
  return mb::runPerfTest(test, argc, argv);
}
