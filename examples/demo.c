/* A short tour of the C API: run with `megascale-run -n 4 demo`. Each rank all-reduces its rank number,
 * splits into even and odd ranks, broadcasts inside its half, and checks every result. */
#include <megascale/megascale.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                     \
  do {                                                                                                  \
    mscResult_t r_ = (call);                                                                            \
    if (r_ != mscSuccess) {                                                                             \
      fprintf(stderr, "%s failed: %s: %s\n", #call, mscGetErrorString(r_), mscGetLastError());          \
      exit(1);                                                                                          \
    }                                                                                                   \
  } while (0)

int main(void) {
  mscComm_t world, half;
  int rank, size;
  CHECK(mscCommInitFromEnv(&world));
  CHECK(mscCommUserRank(world, &rank));
  CHECK(mscCommCount(world, &size));

  float mine[4], sum[4];
  for (int i = 0; i < 4; ++i) mine[i] = (float)(rank + i);
  CHECK(mscAllReduce(mine, sum, 4, mscFloat32, mscSum, world));
  CHECK(mscCommSynchronize(world));
  float expected0 = (float)(size * (size - 1) / 2);
  if (sum[0] != expected0 || sum[3] != expected0 + 3.0f * size) {
    fprintf(stderr, "rank %d: all-reduce gave %g, expected %g\n", rank, sum[0], expected0);
    return 1;
  }

  CHECK(mscCommSplit(world, rank % 2, rank, &half));
  int half_rank, half_size;
  CHECK(mscCommUserRank(half, &half_rank));
  CHECK(mscCommCount(half, &half_size));
  int value = half_rank == 0 ? 1000 + rank : -1;
  CHECK(mscBroadcast(&value, &value, 1, mscInt32, 0, half));
  CHECK(mscCommSynchronize(half));
  if (value != 1000 + rank % 2) {
    fprintf(stderr, "rank %d: broadcast in half %d gave %d\n", rank, rank % 2, value);
    return 1;
  }
  printf("rank %d of %d: all-reduce sum %g; rank %d of %d in the %s half got %d from its root\n", rank, size, sum[0],
         half_rank, half_size, rank % 2 ? "odd" : "even", value);
  CHECK(mscCommDestroy(half));
  CHECK(mscCommDestroy(world));
  return 0;
}
