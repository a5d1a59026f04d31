// ncclNetPlugin_v8 (NCCL 2.20-2.23): int message sizes, one process-wide init.
#include "nccl_plugin/adapters.h"

namespace megascale::nccl_plugin {
namespace {

using namespace nccl_abi;

Result isendV8(void* comm, void* data, int size, int tag, void* mhandle, void** request) {
  if (size < 0) return kInternalError;
  return isend(comm, data, static_cast<size_t>(size), tag, mhandle, request);
}
Result irecvV8(void* comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request) {
  if (n < 1 || n > 8 || sizes == nullptr) return kInternalError;
  size_t wide[8];
  for (int i = 0; i < n; ++i) {
    if (sizes[i] < 0) return kInternalError;
    wide[i] = static_cast<size_t>(sizes[i]);
  }
  return irecv(comm, n, data, wide, tags, mhandles, request);
}

}  // namespace
}  // namespace megascale::nccl_plugin

using namespace megascale::nccl_plugin;

extern "C" __attribute__((visibility("default"))) const megascale::nccl_abi::NetV8 ncclNetPlugin_v8 = {
    "megascale",     init,      devices,         fillProperties<megascale::nccl_abi::PropertiesV8>,
    listenNoContext, connectNoContext, acceptHost,      registerMemory,
    registerDmaBuf,      deregisterMemory, isendV8,  irecvV8,
    iflush,          testIntSizes, closeSend,    closeRecv,
    closeListen,     noDeviceMr, receiveConsumed,
};
