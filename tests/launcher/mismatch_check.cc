// The program's bug the diagnosis must name as such: a few good all-gathers, then rank `culprit` (argument 1,
// default 3) calls the next one with half the count of the others. Each rank reports a heartbeat per round, so
// megascale-run watches it for hangs, and exits 1 when its all-gather fails.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "megascale/megascale.h"

int main(int argc, char** argv) {
  const int culprit = argc > 1 ? std::atoi(argv[1]) : 3;
  mscComm_t comm;
  if (mscCommInitFromEnv(&comm) != mscSuccess) return 1;
  int rank = 0, size = 0;
  mscCommUserRank(comm, &rank);
  mscCommCount(comm, &size);
  mscCommSetName(comm, "world");
  const size_t count = 2048;
  std::vector<float> in(count, static_cast<float>(rank)), out(count * static_cast<size_t>(size));
  for (int round = 0; round < 4; ++round) {
    mscHeartbeat(round, "gather");
    const size_t mine = round == 3 && rank == culprit ? count / 2 : count;
    if (mscAllGather(in.data(), out.data(), mine, mscFloat32, comm) != mscSuccess || mscCommSynchronize(comm) != mscSuccess) {
      std::fprintf(stderr, "rank %d: all_gather of round %d failed: %s\n", rank, round, mscGetLastError());
      return 1;
    }
  }
  mscCommDestroy(comm);
  return 0;
}
