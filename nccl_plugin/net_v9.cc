// ncclNetPlugin_v9 (NCCL 2.24-2.25): size_t message sizes, virtual-device properties.
#include "nccl_plugin/adapters.h"

using namespace megascale::nccl_plugin;

extern "C" __attribute__((visibility("default"))) const megascale::nccl_abi::NetV9 ncclNetPlugin_v9 = {
    "megascale",  init,         devices,    fillProperties<megascale::nccl_abi::PropertiesV9>,
    listenNoContext, connectNoContext, acceptHost, registerMemory,
    registerDmaBuf,   deregisterMemory, isend,  irecvWide,
    iflush,       testIntSizes, closeSend,  closeRecv,
    closeListen,  noDeviceMr,   receiveConsumed, makeVirtualDevice,
};
