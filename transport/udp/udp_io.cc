#include "transport/udp/udp_io.h"

#include <dlfcn.h>

#include <mutex>

#include "common/status.h"
#include "transport/udp/dpdk/dpdk_module.h"
#include "transport/udp/kernel_udp_io.h"

namespace megascale::transport {

namespace {

// The DPDK io lives in a module of its own, so that the library and the NCCL plugin load where DPDK is not
// installed: it is looked for next to this library first, then on the loader's path. Loaded once, never unloaded
// (DPDK's EAL starts once per process).
DpdkOpenFunction dpdkModule(std::string* error) {
  static std::once_flag once;
  static DpdkOpenFunction open = nullptr;
  static std::string load_error;
  std::call_once(once, [] {
    std::string next_to_us = kDpdkModuleName;
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&openUdpIo), &self) != 0 && self.dli_fname != nullptr) {
      const std::string path = self.dli_fname;
      const size_t slash = path.rfind('/');
      if (slash != std::string::npos) next_to_us = path.substr(0, slash + 1) + kDpdkModuleName;
    }
    void* module = dlopen(next_to_us.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) module = dlopen(kDpdkModuleName, RTLD_NOW | RTLD_LOCAL);
    if (module == nullptr) {
      const char* why = dlerror();
      load_error = std::string(kDpdkModuleName) + " did not load (" + (why != nullptr ? why : "not found") +
                   "): this build has no DPDK (build with libdpdk-dev installed) or DPDK's libraries are missing";
      return;
    }
    open = reinterpret_cast<DpdkOpenFunction>(dlsym(module, kDpdkOpenSymbol));
    if (open == nullptr) load_error = std::string(kDpdkModuleName) + " has no " + kDpdkOpenSymbol;
  });
  *error = load_error;
  return open;
}

}  // namespace

std::unique_ptr<UdpIo> openUdpIo(const UdpIoSetup& setup) {
  if (setup.kind == "kernel") return std::make_unique<KernelUdpIo>(setup);
  if (setup.kind != "dpdk") {
    throw Error(ErrorCode::kInvalidArgument, "udp: io '" + setup.kind + "': expected kernel or dpdk");
  }
  std::string error;
  DpdkOpenFunction open = dpdkModule(&error);
  if (open == nullptr) throw Error(ErrorCode::kUnavailable, "udp: MEGASCALE_UDP_IO=dpdk: " + error);
  char why[512] = {};
  UdpIo* io = open(&setup, why, sizeof(why));
  if (io == nullptr) throw Error(ErrorCode::kUnavailable, "udp: MEGASCALE_UDP_IO=dpdk: " + std::string(why));
  return std::unique_ptr<UdpIo>(io);
}

}  // namespace megascale::transport
