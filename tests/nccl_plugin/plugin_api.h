// One uniform view of every ncclNetPlugin_vN the built library exports, found with dlopen/dlsym as NCCL does,
// so each harness test runs against all versions.
#pragma once

#include <dlfcn.h>

#include <functional>
#include <string>
#include <vector>

#include "nccl_plugin/net_abi.h"

namespace megascale::nccl_plugin::testing {

using nccl_abi::Result;

struct PluginApi {
  std::string version;
  const char* name = nullptr;
  std::function<Result()> init;
  std::function<Result()> finalize;
  std::function<Result(int*)> devices;
  std::function<Result(int, int* speed, int* max_recvs, int* ptr_support, const char** device_name)> properties;
  std::function<Result(int, void*, void**)> listen;
  std::function<Result(int, void*, void**)> connect;
  std::function<Result(void*, void**)> accept;
  std::function<Result(void*, void*, size_t, int, void**)> regMr;
  std::function<Result(void*, void*)> deregMr;
  std::function<Result(void*, void*, size_t, int, void*, void**)> isend;
  std::function<Result(void*, int, void**, size_t*, int*, void**, void**)> irecv;
  std::function<Result(void*, int*, int*)> test;
  std::function<Result(void*)> closeSend, closeRecv, closeListen;
};

/// Every version found in the library at `path` (v8 to v11), opened RTLD_NOW | RTLD_LOCAL.
std::vector<PluginApi> loadPlugin(const std::string& path);

}  // namespace megascale::nccl_plugin::testing
