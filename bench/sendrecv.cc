// sendrecv_perf: every rank sends to rank+1 and receives from rank-1 at once; busbw = algbw. With --net-plugin,
// point-to-point through an NCCL net plugin next to the bare transport (bench/net_plugin_perf.h).
#include <cstring>

#include "bench/net_plugin_perf.h"
#include "bench/perf_test.h"
#include "collectives/dtype.h"

namespace mb = megascale::bench;

int main(int argc, char** argv) {
  mb::CollectiveTest test{
      "sendrecv_perf", false, false, false,
      [](size_t bytes, size_t es, int, int) {
        size_t c = bytes / es;
        return mb::Geometry{c, c, c, 0, 0, 0};
      },
      [](int) { return 1.0; },
      [](const mb::Geometry& g, size_t es, int) { return static_cast<double>(g.count * es); },
      [](const mb::Geometry&, int rank, int n, int, mscRedOp_t op, size_t i, int seed, bool*) {
        return mb::inputValue((rank - 1 + n) % n, i, seed, op);
      },
      [](const void* s, void* r, const mb::Geometry& g, mscDataType_t t, mscRedOp_t, int, mscComm_t comm) {
        int rank, n;
        mscCommUserRank(comm, &rank);
        mscCommCount(comm, &n);
        if (n == 1) {  // a rank sending to itself: a copy
          if (g.count > 0) std::memcpy(r, s, g.count * megascale::dtypeSize(t));
          return mscSuccess;
        }
        mscGroupStart();
        mscSend(s, g.count, t, (rank + 1) % n, comm);
        mscRecv(r, g.count, t, (rank - 1 + n) % n, comm);
        return mscGroupEnd();
      }};
  return mb::runPerfTest(test, argc, argv, mb::runNetPluginPerf);
}
