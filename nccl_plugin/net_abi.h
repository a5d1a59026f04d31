// The NCCL net plugin ABI, declared here from NCCL's documented layout (plugins/net/README.md and the
// net_vN headers' field lists; no NCCL source text): result codes, the logger, properties and the function
// tables of versions 8 to 11. NCCL finds `ncclNetPlugin_vN` (a data symbol of these layouts) with dlsym.
// Field order and types must match exactly: tests/nccl_plugin checks sizes and offsets.
#pragma once

#include <cstddef>
#include <cstdint>

namespace megascale::nccl_abi {

enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,      // network or OS failure
  kInternalError = 3,    // NCCL misused the API
  kInvalidArgument = 4,
  kInvalidUsage = 5,     // user or configuration error (e.g. a message larger than the receive)
  kRemoteError = 6,
  kInProgress = 7,
};

enum LogLevel : int { kLogNone = 0, kLogVersion = 1, kLogWarn = 2, kLogInfo = 3, kLogAbort = 4, kLogTrace = 5 };
constexpr unsigned long kLogSubsystemInit = 0x1, kLogSubsystemNet = 0x10;
using Logger = void (*)(LogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...);
using ProfilerCallback = Result (*)(void** event, int type, void* parent, int64_t plugin_id, void* data);

constexpr int kHandleMaxBytes = 128;   // NCCL_NET_HANDLE_MAXSIZE
constexpr int kMaxRequests = 32;       // NCCL_NET_MAX_REQUESTS
constexpr int kPtrHost = 0x1, kPtrCuda = 0x2, kPtrDmaBuf = 0x4;
constexpr int kDeviceHost = 0;         // NCCL_NET_DEVICE_HOST
constexpr int kMaxDevsPerNic = 4;      // NCCL_NET_MAX_DEVS_PER_NIC for v9-v11
constexpr int kTrafficClassUndefined = -1;

struct DeviceHandle {  // identical in v7-v11
  int net_device_type;
  int net_device_version;
  void* handle;
  size_t size;
  int needs_proxy_progress;
};

struct VirtualDeviceProps {
  int ndevs;
  int devs[kMaxDevsPerNic];
};

struct PropertiesV8 {
  char* name;
  char* pci_path;
  uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int speed;  // Mbps
  int port;
  float latency;  // us; 0 = NCCL's default
  int max_comms;
  int max_recvs;
  int net_device_type;
  int net_device_version;
};

struct PropertiesV9 {  // also v10
  char* name;
  char* pci_path;
  uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int force_flush;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  int net_device_type;
  int net_device_version;
  VirtualDeviceProps vprops;
  size_t max_p2p_bytes;
  size_t max_coll_bytes;
};

struct PropertiesV11 {
  char* name;
  char* pci_path;
  uint64_t guid;
  int ptr_support;
  int reg_is_global;
  int force_flush;
  int speed;
  int port;
  float latency;
  int max_comms;
  int max_recvs;
  int net_device_type;
  int net_device_version;
  VirtualDeviceProps vprops;
  size_t max_p2p_bytes;
  size_t max_coll_bytes;
  int max_multi_request_size;
};

struct CommConfig {  // v10 and v11
  int traffic_class;
};

struct NetAttrV11;  // setNetAttr hints; we accept and ignore them

struct NetV8 {
  const char* name;
  Result (*init)(Logger log);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV8* props);
  Result (*listen)(int dev, void* handle, void** listen_comm);
  Result (*connect)(int dev, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, int size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* send_comm);
  Result (*closeRecv)(void* recv_comm);
  Result (*closeListen)(void* listen_comm);
  Result (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecvConsumed)(void* recv_comm, int n, void* request);
};

struct NetV9 {
  const char* name;
  Result (*init)(Logger log);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV9* props);
  Result (*listen)(int dev, void* handle, void** listen_comm);
  Result (*connect)(int dev, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle, void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* send_comm);
  Result (*closeRecv)(void* recv_comm);
  Result (*closeListen)(void* listen_comm);
  Result (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecvConsumed)(void* recv_comm, int n, void* request);
  Result (*makeVDevice)(int* d, VirtualDeviceProps* props);
};

struct NetV10 {
  const char* name;
  Result (*init)(Logger log, ProfilerCallback profiler);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV9* props);
  Result (*listen)(int dev, void* handle, void** listen_comm);
  Result (*connect)(int dev, CommConfig* config, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                  void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* send_comm);
  Result (*closeRecv)(void* recv_comm);
  Result (*closeListen)(void* listen_comm);
  Result (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecvConsumed)(void* recv_comm, int n, void* request);
  Result (*makeVDevice)(int* d, VirtualDeviceProps* props);
};

struct NetV11 {
  const char* name;
  Result (*init)(void** ctx, uint64_t comm_id, CommConfig* config, Logger log, ProfilerCallback profiler);
  Result (*devices)(int* ndev);
  Result (*getProperties)(int dev, PropertiesV11* props);
  Result (*listen)(void* ctx, int dev, void* handle, void** listen_comm);
  Result (*connect)(void* ctx, int dev, void* handle, void** send_comm, DeviceHandle** send_dev_comm);
  Result (*accept)(void* listen_comm, void** recv_comm, DeviceHandle** recv_dev_comm);
  Result (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  Result (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  Result (*deregMr)(void* comm, void* mhandle);
  Result (*isend)(void* send_comm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request);
  Result (*irecv)(void* recv_comm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                  void** request);
  Result (*iflush)(void* recv_comm, int n, void** data, int* sizes, void** mhandles, void** request);
  Result (*test)(void* request, int* done, int* sizes);
  Result (*closeSend)(void* send_comm);
  Result (*closeRecv)(void* recv_comm);
  Result (*closeListen)(void* listen_comm);
  Result (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);
  Result (*irecvConsumed)(void* recv_comm, int n, void* request);
  Result (*makeVDevice)(int* d, VirtualDeviceProps* props);
  Result (*finalize)(void* ctx);
  Result (*setNetAttr)(void* ctx, NetAttrV11* attr);
};

}  // namespace megascale::nccl_abi
