// nccl_plugin_devices_probe PLUGIN [MERGE]: loads the plugin's newest version as NCCL does, prints every device
// it reports ("dev D: NAME port P guid G pci PATH speed S merges A,B"), then on each device connects to itself,
// registers a buffer on the comms and moves 1 MiB both registered and not, checking every byte ("dev D:
// moved"). MERGE ("0,2"): makes a virtual device of those (makeVDevice, as NCCL does to fuse NICs), prints the
// devices again and moves on that device alone. Exits non-zero on any failure, naming the device and the call.
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <string>
#include <vector>

#include "nccl_plugin/plugin_driver.h"

using namespace megascale::nccl_plugin;
using megascale::nccl_abi::kSuccess;

namespace {

constexpr auto kTimeout = std::chrono::seconds(30);

bool moveOnDevice(const PluginApi& api, int dev) {
  char handle[megascale::nccl_abi::kHandleMaxBytes] = {};
  void *listen = nullptr, *send = nullptr, *recv = nullptr;
  if (api.listen(dev, handle, &listen) != kSuccess ||
      connectBothWays(api, dev, handle, listen, ConnectOrder::kConnectFirst, deadlineIn(kTimeout), &send, &recv) != kSuccess) {
    std::printf("dev %d: connecting failed\n", dev);
    return false;
  }
  bool ok = true;
  std::vector<uint8_t> out(1 << 20), in(1 << 20);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i * 7 + static_cast<size_t>(dev));
  void *send_mr = nullptr, *recv_mr = nullptr;
  if (api.regMr(send, out.data(), out.size(), megascale::nccl_abi::kPtrHost, &send_mr) != kSuccess ||
      api.regMr(recv, in.data(), in.size(), megascale::nccl_abi::kPtrHost, &recv_mr) != kSuccess) {
    std::printf("dev %d: regMr failed\n", dev);
    ok = false;
  }
  for (int registered = 1; ok && registered >= 0; --registered) {
    std::fill(in.begin(), in.end(), 0);
    void *send_request = nullptr, *recv_request = nullptr;
    void* data = in.data();
    size_t capacity = in.size();
    int tag = registered;
    void* mr = registered ? recv_mr : nullptr;
    int size = -1;
    ok = postUntilTaken([&](void** r) { return api.irecv(recv, 1, &data, &capacity, &tag, &mr, r); },
                        deadlineIn(kTimeout), &recv_request) == kSuccess &&
         postUntilTaken([&](void** r) { return api.isend(send, out.data(), out.size(), tag, registered ? send_mr : nullptr, r); },
                        deadlineIn(kTimeout), &send_request) == kSuccess &&
         waitBothDone(api, send_request, recv_request, &size, deadlineIn(kTimeout)) == kSuccess &&
         size == static_cast<int>(out.size()) && in == out;
    if (!ok) std::printf("dev %d: the %s transfer failed or was wrong\n", dev, registered ? "registered" : "unregistered");
  }
  if (send_mr != nullptr) api.deregMr(send, send_mr);
  if (recv_mr != nullptr) api.deregMr(recv, recv_mr);
  api.closeSend(send);
  api.closeRecv(recv);
  api.closeListen(listen);
  if (ok) std::printf("dev %d: moved 1 MiB registered and not\n", dev);
  return ok;
}

}  // namespace

// Prints every device the plugin reports; false if a call fails.
bool listDevices(const PluginApi& api) {
  int count = -1;
  if (api.devices(&count) != kSuccess) return false;
  std::printf("%s: %d devices\n", api.version.c_str(), count);
  for (int dev = 0; dev < count; ++dev) {
    NetProperties p;
    if (api.properties(dev, &p) != kSuccess) return false;
    std::string merges;
    for (int i = 0; i < p.vprops.ndevs; ++i) merges += (i > 0 ? "," : "") + std::to_string(p.vprops.devs[i]);
    std::printf("dev %d: %s port %d guid %llx pci %s speed %d merges %s\n", dev, p.name, p.port,
                static_cast<unsigned long long>(p.guid), p.pci_path != nullptr ? p.pci_path : "-", p.speed_mbps,
                merges.c_str());
  }
  return true;
}

// A virtual device of the comma-separated devices in `list`; -1 when the plugin refuses.
int makeVirtualDevice(const PluginApi& api, const std::string& list) {
  megascale::nccl_abi::VirtualDeviceProps props{};
  std::stringstream in(list);
  for (std::string dev; std::getline(in, dev, ',') && props.ndevs < megascale::nccl_abi::kMaxDevsPerNic;) {
    props.devs[props.ndevs++] = std::atoi(dev.c_str());
  }
  int d = -1;
  if (!api.makeVDevice || api.makeVDevice(&d, &props) != kSuccess) return -1;
  std::printf("made virtual device %d of %s\n", d, list.c_str());
  return d;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s PLUGIN.so [DEVICES_TO_MERGE]\n", argv[0]);
    return 2;
  }
  try {
    const std::vector<PluginApi> apis = loadPlugin(argv[1]);
    const PluginApi& api = apis.back();
    if (api.init() != kSuccess || !listDevices(api)) {
      std::printf("init failed\n");
      return 1;
    }
    bool ok = true;
    if (argc == 3) {
      const int merged = makeVirtualDevice(api, argv[2]);
      ok = merged >= 0 && listDevices(api) && moveOnDevice(api, merged);
      if (merged < 0) std::printf("makeVDevice of %s failed\n", argv[2]);
    } else {
      int count = 0;
      api.devices(&count);
      for (int dev = 0; dev < count; ++dev) ok = moveOnDevice(api, dev) && ok;
    }
    api.finalize();
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
