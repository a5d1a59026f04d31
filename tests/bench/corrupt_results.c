/* LD_PRELOAD fault injection for the benchmark's data check: wraps mscAllReduce to remember the output
 * buffer and mscCommSynchronize to flip one byte of it once the real operation has finished. The library
 * itself is untouched; all_reduce_perf must notice and fail. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <megascale/megascale.h>
#include <stdint.h>

static void* g_last_recv;
static size_t g_last_count;

mscResult_t mscAllReduce(const void* s, void* r, size_t count, mscDataType_t t, mscRedOp_t op, mscComm_t comm) {
  mscResult_t (*real)(const void*, void*, size_t, mscDataType_t, mscRedOp_t, mscComm_t) = dlsym(RTLD_NEXT, "mscAllReduce");
  /* Only the benchmark's own data buffers; its 1-element control all-reduces stay intact. */
  if (count > 1) {
    g_last_recv = r;
    g_last_count = count;
  }
  return real(s, r, count, t, op, comm);
}

mscResult_t mscCommSynchronize(mscComm_t comm) {
  mscResult_t (*real)(mscComm_t) = dlsym(RTLD_NEXT, "mscCommSynchronize");
  mscResult_t result = real(comm);
  if (g_last_recv != NULL && g_last_count > 1) {
    ((uint8_t*)g_last_recv)[0] ^= 0x40;
    g_last_recv = NULL;
  }
  return result;
}
