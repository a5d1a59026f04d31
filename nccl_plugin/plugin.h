// The one implementation behind every exported ncclNetPlugin_vN: devices from topology/, connections and
// transfers on transport/ (tcp), NCCL's result codes and logger. The per-version tables in net_v*.cc only
// convert argument types.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl_plugin/net_abi.h"

namespace megascale::nccl_plugin {

using nccl_abi::Result;

/// What every properties version shares; adapters copy it into their struct.
struct DeviceProperties {
  char* name;
  char* pci_path;
  uint64_t guid;  // the NIC's: a dual-port NIC's ports share it (NCCL groups ports of one NIC by it)
  int port;       // the port on that NIC (0: an interface, no port)
  int speed_mbps;
  int ptr_support;  // nccl_abi::kPtrHost, plus kPtrCuda | kPtrDmaBuf where device memory can be registered
  int max_recvs;
  size_t max_p2p_bytes;
  size_t max_coll_bytes;
  int ndevs;  // the physical devices it merges: 1 (itself) unless made by makeVirtualDevice
  int devs[nccl_abi::kMaxDevsPerNic];
};

/// v11's per-communicator context (older versions pass none: traffic class undefined).
struct Context {
  uint64_t comm_id = 0;
  int traffic_class = nccl_abi::kTrafficClassUndefined;
};

/// Discovers devices once per process (MEGASCALE_NET_IF, else NCCL_SOCKET_IFNAME, selects interfaces) and keeps
/// the logger. Fails with kSystemError and a logged reason when no usable interface exists.
Result init(nccl_abi::Logger logger);
Result devices(int* count);
Result properties(int dev, DeviceProperties* out);
/// v9+ makeVDevice: a device striping over 1 to 4 of the physical ones (its connections' queue pairs spread over
/// their NICs), numbered after every device so far; the same set again gives the same device. Only where the
/// transport drives NICs of its own (ibverbs).
Result makeVirtualDevice(int* d, nccl_abi::VirtualDeviceProps* props);

Result listen(const Context* context, int dev, void* handle, void** listen_comm);
/// Non-blocking: *send_comm stays null until connected; call again with the same handle.
Result connect(const Context* context, int dev, void* handle, void** send_comm);
/// Non-blocking: *recv_comm stays null until a peer has connected.
Result accept(void* listen_comm, void** recv_comm);

/// Host memory, or (type kPtrCuda, where ptr_support has it) device memory by dma-buf.
Result registerMemory(void* comm, void* data, size_t size, int type, void** mhandle);
/// Memory NCCL gives as a dma-buf descriptor (`offset`: where data starts in it).
Result registerDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
Result deregisterMemory(void* comm, void* mhandle);

/// *request = null when no request slot is free now (NCCL retries).
Result isend(void* send_comm, void* data, size_t size, int tag, void* mhandle, void** request);
Result irecv(void* recv_comm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
             void** request);
/// After a receive into device memory: an RDMA READ that makes it visible to the GPU (as NCCL's IB transport).
/// Host memory needs none: *request = null.
Result iflush(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
/// sizes may be null; else gets 1 (send) or n (receive) byte counts, each at most `max_size`.
Result test(void* request, int* done, int* sizes, size_t max_size);

Result closeSend(void* send_comm);
Result closeRecv(void* recv_comm);
Result closeListen(void* listen_comm);

/// v11: a context per communicator.
Result initContext(void** context, uint64_t comm_id, const nccl_abi::CommConfig* config, nccl_abi::Logger logger);
Result finalizeContext(void* context);

}  // namespace megascale::nccl_plugin
