// Loads an NCCL net plugin the way NCCL does (dlopen RTLD_NOW | RTLD_LOCAL, dlsym ncclNetPlugin_vN) and gives
// one uniform view of each version it exports (v8 to v11), so the harness and sendrecv_perf drive any plugin,
// ours or another, through the same calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nccl_plugin/net_abi.h"

namespace megascale::nccl_plugin {

using nccl_abi::Result;

/// The version-independent part of getProperties.
struct NetProperties {
  const char* name = nullptr;
  const char* pci_path = nullptr;
  uint64_t guid = 0;
  int ptr_support = 0;
  int speed_mbps = 0;
  int max_recvs = 0;
  int port = 0;
  nccl_abi::VirtualDeviceProps vprops{1, {0}};  // v9+: the physical devices a virtual one merges
};

struct LoaderOptions {
  int traffic_class = nccl_abi::kTrafficClassUndefined;  // v10 connect / v11 init
  uint64_t comm_id = 42;                                   // v11 init
  nccl_abi::LogLevel log_level = nccl_abi::kLogWarn;       // plugin messages up to this level go to stderr
};

struct PluginApi {
  std::string version;  // "v8" .. "v11"
  const char* name = nullptr;
  std::function<Result()> init;
  std::function<Result()> finalize;  // v11's context; a no-op before
  std::function<Result(int*)> devices;
  std::function<Result(int, NetProperties*)> properties;
  std::function<Result(int, void*, void**)> listen;
  std::function<Result(int, void*, void**)> connect;
  std::function<Result(void*, void**)> accept;
  std::function<Result(void*, void*, size_t, int, void**)> regMr;
  std::function<Result(void*, void*, size_t, int, uint64_t, int, void**)> regMrDmaBuf;
  std::function<Result(void*, void*)> deregMr;
  std::function<Result(void*, void*, size_t, int, void*, void**)> isend;
  std::function<Result(void*, int, void**, size_t*, int*, void**, void**)> irecv;
  std::function<Result(void*, int, void**, int*, void**, void**)> iflush;
  std::function<Result(void*, int*, int*)> test;
  std::function<Result(void*)> closeSend, closeRecv, closeListen;
  std::function<Result(int*, nccl_abi::VirtualDeviceProps*)> makeVDevice;  // v9+; empty where the plugin has none
};

/// Every version found in the library at `path`, oldest first. Throws std::runtime_error naming dlerror() when
/// the library cannot be opened. The library stays loaded for the life of the process (as in NCCL).
std::vector<PluginApi> loadPlugin(const std::string& path, const LoaderOptions& options = {});

}  // namespace megascale::nccl_plugin
