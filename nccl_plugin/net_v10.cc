// ncclNetPlugin_v10 (NCCL 2.26-2.27): a profiler callback at init, the comm config (traffic class) at connect,
// profiler parent handles on isend/irecv (we record no network events, so they are ignored).
#include "nccl_plugin/adapters.h"

namespace megascale::nccl_plugin {
namespace {

using namespace nccl_abi;

Result initV10(Logger logger, ProfilerCallback) { return init(logger); }
Result connectV10(int dev, CommConfig* config, void* handle, void** send_comm, DeviceHandle** device_comm) {
  noDeviceHandle(device_comm);
  Context context;
  if (config != nullptr) context.traffic_class = config->traffic_class;
  return connect(&context, dev, handle, send_comm);
}

}  // namespace
}  // namespace megascale::nccl_plugin

using namespace megascale::nccl_plugin;

extern "C" __attribute__((visibility("default"))) const megascale::nccl_abi::NetV10 ncclNetPlugin_v10 = {
    "megascale",  initV10,      devices,    fillProperties<megascale::nccl_abi::PropertiesV9>,
    listenNoContext,    connectV10,   acceptHost, registerMemory,
    registerDmaBuf,   deregisterMemory, isendProfiled, irecvProfiled,
    iflush,       testIntSizes, closeSend,  closeRecv,
    closeListen,  noDeviceMr,   receiveConsumed, makeVirtualDevice,
};
