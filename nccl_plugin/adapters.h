// What the per-version tables share: properties for any version's struct (fields an older version lacks are
// skipped at compile time) and the entry points whose signatures did not change between versions.
#pragma once

#include <climits>

#include "nccl_plugin/plugin.h"

namespace megascale::nccl_plugin {

template <typename Props>
Result fillProperties(int dev, Props* props) {
  DeviceProperties d{};
  Result r = properties(dev, &d);
  if (r != nccl_abi::kSuccess) return r;
  *props = Props{};
  props->name = d.name;
  props->pci_path = d.pci_path;
  props->guid = d.guid;
  props->ptr_support = d.ptr_support;
  props->reg_is_global = 0;
  props->speed = d.speed_mbps;
  props->port = d.port;
  props->latency = 0;
  props->max_comms = 65536;
  props->max_recvs = d.max_recvs;
  props->net_device_type = nccl_abi::kDeviceHost;
  props->net_device_version = 0;
  if constexpr (requires { props->vprops; }) {
    props->force_flush = 0;
    props->vprops.ndevs = d.ndevs;
    for (int i = 0; i < d.ndevs; ++i) props->vprops.devs[i] = d.devs[i];
    props->max_p2p_bytes = d.max_p2p_bytes;
    props->max_coll_bytes = d.max_coll_bytes;
  }
  if constexpr (requires { props->max_multi_request_size; }) props->max_multi_request_size = 1;
  return nccl_abi::kSuccess;
}

/// Connect/accept with a device-handle out-parameter: we are a host plugin and never offload.
inline void noDeviceHandle(nccl_abi::DeviceHandle** device_comm) {
  if (device_comm != nullptr) *device_comm = nullptr;
}

// v8-v10 have no per-communicator context.
inline Result listenNoContext(int dev, void* handle, void** comm) { return listen(nullptr, dev, handle, comm); }
inline Result connectNoContext(int dev, void* handle, void** send_comm, nccl_abi::DeviceHandle** device_comm) {
  noDeviceHandle(device_comm);
  return connect(nullptr, dev, handle, send_comm);
}

// v9+: size_t sizes. v10+ add profiler parent handles, which we ignore (we record no network events).
inline Result irecvWide(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** request) {
  return irecv(comm, n, data, sizes, tags, mhandles, request);
}
inline Result isendProfiled(void* comm, void* data, size_t size, int tag, void* mhandle, void*, void** request) {
  return isend(comm, data, size, tag, mhandle, request);
}
inline Result irecvProfiled(void* comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**,
                            void** request) {
  return irecv(comm, n, data, sizes, tags, mhandles, request);
}

inline Result acceptHost(void* listen_comm, void** recv_comm, nccl_abi::DeviceHandle** device_comm) {
  noDeviceHandle(device_comm);
  return accept(listen_comm, recv_comm);
}

/// Sizes in test() are int in every version.
inline Result testIntSizes(void* request, int* done, int* sizes) { return test(request, done, sizes, INT_MAX); }

// No device-side handles: we are a host plugin (the proxy thread drives every transfer).
inline Result noDeviceMr(void*, void*, void**) { return nccl_abi::kInternalError; }
inline Result receiveConsumed(void*, int, void*) { return nccl_abi::kSuccess; }

}  // namespace megascale::nccl_plugin
