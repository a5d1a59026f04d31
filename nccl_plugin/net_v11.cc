// ncclNetPlugin_v11 (NCCL 2.28-2.29): init and finalize per communicator with a context that carries the
// communicator's traffic class to every listen and connect.
#include "nccl_plugin/adapters.h"

namespace megascale::nccl_plugin {
namespace {

using namespace nccl_abi;

Result initV11(void** ctx, uint64_t comm_id, CommConfig* config, Logger logger, ProfilerCallback) {
  return initContext(ctx, comm_id, config, logger);
}
Result listenV11(void* ctx, int dev, void* handle, void** comm) {
  return listen(static_cast<Context*>(ctx), dev, handle, comm);
}
Result connectV11(void* ctx, int dev, void* handle, void** send_comm, DeviceHandle** device_comm) {
  noDeviceHandle(device_comm);
  return connect(static_cast<Context*>(ctx), dev, handle, send_comm);
}
Result setNetAttrV11(void*, NetAttrV11*) { return kSuccess; }  // hints only

}  // namespace
}  // namespace megascale::nccl_plugin

using namespace megascale::nccl_plugin;

extern "C" __attribute__((visibility("default"))) const megascale::nccl_abi::NetV11 ncclNetPlugin_v11 = {
    "megascale",  initV11,      devices,    fillProperties<megascale::nccl_abi::PropertiesV11>,
    listenV11,    connectV11,   acceptHost, registerMemory,
    registerDmaBuf,   deregisterMemory, isendProfiled, irecvProfiled,
    iflush,       testIntSizes, closeSend,  closeRecv,
    closeListen,  noDeviceMr,   receiveConsumed, makeVirtualDevice,
    finalizeContext, setNetAttrV11,
};
