#include "nccl_plugin/plugin_loader.h"

#include <dlfcn.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace megascale::nccl_plugin {

namespace {

using namespace nccl_abi;

LogLevel g_log_level = kLogWarn;  // one logger per process, as NCCL has

void logToStderr(LogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level > g_log_level) return;
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fputc('\n', stderr);
}

// What every version shares, given its table type.
template <typename Net, typename Props>
void common(PluginApi& api, const Net* net) {
  api.name = net->name;
  api.devices = net->devices;
  api.properties = [net](int dev, NetProperties* out) {
    Props p{};
    Result r = net->getProperties(dev, &p);
    *out = NetProperties{p.name, p.pci_path, p.guid, p.ptr_support, p.speed, p.max_recvs, p.port};
    if constexpr (requires { p.vprops; }) {
      out->vprops = p.vprops;
    } else {
      out->vprops = nccl_abi::VirtualDeviceProps{1, {dev}};
    }
    return r;
  };
  if constexpr (requires { net->makeVDevice; }) {
    // NCCL may leave it null (no NIC fusion); so may a plugin.
    if (net->makeVDevice != nullptr) api.makeVDevice = net->makeVDevice;
  }
  api.accept = [net](void* l, void** r) { return net->accept(l, r, nullptr); };
  api.regMr = net->regMr;
  api.regMrDmaBuf = net->regMrDmaBuf;
  api.deregMr = net->deregMr;
  api.iflush = net->iflush;
  api.test = net->test;
  api.closeSend = net->closeSend;
  api.closeRecv = net->closeRecv;
  api.closeListen = net->closeListen;
}

}  // namespace

std::vector<PluginApi> loadPlugin(const std::string& path, const LoaderOptions& options) {
  g_log_level = options.log_level;
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
  std::vector<PluginApi> apis;
  if (auto* net = static_cast<const NetV8*>(dlsym(library, "ncclNetPlugin_v8"))) {
    PluginApi api;
    api.version = "v8";
    common<NetV8, PropertiesV8>(api, net);
    api.init = [net] { return net->init(logToStderr); };
    api.finalize = [] { return kSuccess; };
    api.listen = net->listen;
    api.connect = [net](int dev, void* h, void** s) {
      DeviceHandle* device = nullptr;
      return net->connect(dev, h, s, &device);
    };
    api.isend = [net](void* c, void* d, size_t n, int tag, void* mh, void** req) {
      return n > INT_MAX ? kInternalError : net->isend(c, d, static_cast<int>(n), tag, mh, req);
    };
    api.irecv = [net](void* c, int n, void** d, size_t* sizes, int* tags, void** mh, void** req) {
      int narrow[8] = {};  // an n outside 1..8 is passed on for the plugin to refuse
      for (int i = 0; n <= 8 && i < n; ++i) {
        if (sizes[i] > INT_MAX) return kInternalError;
        narrow[i] = static_cast<int>(sizes[i]);
      }
      return net->irecv(c, n, d, narrow, tags, mh, req);
    };
    apis.push_back(api);
  }
  if (auto* net = static_cast<const NetV9*>(dlsym(library, "ncclNetPlugin_v9"))) {
    PluginApi api;
    api.version = "v9";
    common<NetV9, PropertiesV9>(api, net);
    api.init = [net] { return net->init(logToStderr); };
    api.finalize = [] { return kSuccess; };
    api.listen = net->listen;
    api.connect = [net](int dev, void* h, void** s) { return net->connect(dev, h, s, nullptr); };
    api.isend = net->isend;
    api.irecv = net->irecv;
    apis.push_back(api);
  }
  if (auto* net = static_cast<const NetV10*>(dlsym(library, "ncclNetPlugin_v10"))) {
    PluginApi api;
    api.version = "v10";
    common<NetV10, PropertiesV9>(api, net);
    api.init = [net] { return net->init(logToStderr, nullptr); };
    api.finalize = [] { return kSuccess; };
    api.listen = net->listen;
    api.connect = [net, options](int dev, void* h, void** s) {
      CommConfig config{options.traffic_class};
      return net->connect(dev, &config, h, s, nullptr);
    };
    api.isend = [net](void* c, void* d, size_t n, int tag, void* mh, void** req) {
      return net->isend(c, d, n, tag, mh, nullptr, req);
    };
    api.irecv = [net](void* c, int n, void** d, size_t* sizes, int* tags, void** mh, void** req) {
      return net->irecv(c, n, d, sizes, tags, mh, nullptr, req);
    };
    apis.push_back(api);
  }
  if (auto* net = static_cast<const NetV11*>(dlsym(library, "ncclNetPlugin_v11"))) {
    PluginApi api;
    api.version = "v11";
    common<NetV11, PropertiesV11>(api, net);
    auto context = std::make_shared<void*>(nullptr);
    api.init = [net, context, options] {
      CommConfig config{options.traffic_class};
      return net->init(context.get(), options.comm_id, &config, logToStderr, nullptr);
    };
    api.finalize = [net, context] { return net->finalize(*context); };
    api.listen = [net, context](int dev, void* h, void** l) { return net->listen(*context, dev, h, l); };
    api.connect = [net, context](int dev, void* h, void** s) { return net->connect(*context, dev, h, s, nullptr); };
    api.isend = [net](void* c, void* d, size_t n, int tag, void* mh, void** req) {
      return net->isend(c, d, n, tag, mh, nullptr, req);
    };
    api.irecv = [net](void* c, int n, void** d, size_t* sizes, int* tags, void** mh, void** req) {
      return net->irecv(c, n, d, sizes, tags, mh, nullptr, req);
    };
    apis.push_back(api);
  }
  return apis;
}

}  // namespace megascale::nccl_plugin
