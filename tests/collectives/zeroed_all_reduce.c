/* LD_PRELOAD fault injection: a library bug that zeroes every all-reduce's output, the 1-element ones a
 * benchmark or test might use for its own verdict included. Each mscAllReduce runs for real, waits for it,
 * then clears the output. collective_check and all_reduce_perf must fail under it; all_gather_perf, whose
 * data never pass through an all-reduce, must still pass. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <megascale/megascale.h>
#include <string.h>

static size_t elementBytes(mscDataType_t t) {
  switch (t) {
    case mscInt8: case mscUint8: return 1;
    case mscFloat16: case mscBfloat16: return 2;
    case mscInt32: case mscUint32: case mscFloat32: return 4;
    default: return 8;
  }
}

mscResult_t mscAllReduce(const void* s, void* r, size_t count, mscDataType_t t, mscRedOp_t op, mscComm_t comm) {
  mscResult_t (*real)(const void*, void*, size_t, mscDataType_t, mscRedOp_t, mscComm_t) = dlsym(RTLD_NEXT, "mscAllReduce");
  mscResult_t (*synchronize)(mscComm_t) = dlsym(RTLD_NEXT, "mscCommSynchronize");
  mscResult_t result = real(s, r, count, t, op, comm);
  if (result != mscSuccess) return result;
  result = synchronize(comm);
  if (count > 0) memset(r, 0, count * elementBytes(t));
  return result;
}
