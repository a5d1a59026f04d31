/* Built against an installed megascale, outside its source tree: one rank, its own store. */
#include <megascale/megascale.h>
#include <stdio.h>

int main(void) {
  mscUniqueId id;
  mscComm_t comm;
  int version;
  double in[3] = {1.5, 2.5, 3.5}, out[3] = {0, 0, 0};
  if (mscGetVersion(&version) != mscSuccess || mscGetUniqueId(&id) != mscSuccess ||
      mscCommInitRank(&comm, 1, id, 0) != mscSuccess) {
    fprintf(stderr, "init failed: %s\n", mscGetLastError());
    return 1;
  }
  if (mscAllReduce(in, out, 3, mscFloat64, mscSum, comm) != mscSuccess || mscCommSynchronize(comm) != mscSuccess) {
    fprintf(stderr, "all-reduce failed: %s\n", mscGetLastError());
    return 1;
  }
  mscCommDestroy(comm);
  if (out[0] != 1.5 || out[2] != 3.5) return 1;
  printf("consumer ok: megascale %d\n", version);
  return 0;
}
