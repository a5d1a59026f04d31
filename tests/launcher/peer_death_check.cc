// Rank 1 kills itself while an all-reduce of 256 MiB is in flight; rank 0 must see the operation fail with
// a remote error (within MEGASCALE_TIMEOUT_MS at worst) and say so. With argument "small", rank 1 dies
// between two 16-byte all-reduces instead, so rank 0 is left waiting in the small-message path.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <string>
#include <vector>

#include "megascale/megascale.h"

int main(int argc, char** argv) {
  bool small = argc > 1 && std::string(argv[1]) == "small";
  signal(SIGTERM, SIG_IGN);  // outlive the launcher's stop request long enough to report
  mscComm_t comm;
  if (mscCommInitFromEnv(&comm) != mscSuccess) return 1;
  int rank;
  mscCommUserRank(comm, &rank);
  std::vector<float> buf(small ? 4 : 64 << 20, 1.0f);
  if (small) {  // a first operation connects the ranks
    if (mscAllReduce(buf.data(), buf.data(), buf.size(), mscFloat32, mscSum, comm) != mscSuccess) return 1;
    if (mscCommSynchronize(comm) != mscSuccess) return 1;
    if (rank == 1) raise(SIGKILL);
  }
  if (rank == 1) {
    std::thread killer([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      raise(SIGKILL);
    });
    mscAllReduce(buf.data(), buf.data(), buf.size(), mscFloat32, mscSum, comm);
    mscCommSynchronize(comm);
    killer.join();
    return 0;
  }
  auto start = std::chrono::steady_clock::now();
  mscResult_t r = mscAllReduce(buf.data(), buf.data(), buf.size(), mscFloat32, mscSum, comm);
  if (r == mscSuccess) r = mscCommSynchronize(comm);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (r == mscRemoteError || r == mscTimeout) {
    std::printf("rank 0 detected the lost peer after %.2f s: %s\n", seconds, mscGetLastError());
    std::fflush(stdout);
    mscCommAbort(comm);
    return 0;
  }
  std::printf("rank 0 got %s instead of an error\n", mscGetErrorString(r));
  return 1;
}
