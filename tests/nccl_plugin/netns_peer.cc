// nccl_plugin_netns_peer PLUGIN recv BYTES | send BYTES HANDLE: one side of a plugin transfer, run in a network
// namespace by the dead-link test. It reports on stdout, a line each: "handle <hex>" (recv), "posted", then
// "result <ncclResult>" when the transfer ends, or "result timeout" if nothing ends it within 60 s.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nccl_plugin/plugin_driver.h"

using namespace megascale::nccl_plugin;
using megascale::nccl_abi::kHandleMaxBytes;
using megascale::nccl_abi::kSuccess;

namespace {

int finish(const PluginApi& api, void* request) {
  const Deadline deadline = deadlineIn(std::chrono::seconds(60));
  int done = 0, size = 0;
  while (!done) {
    const Result r = api.test(request, &done, &size);
    if (r != kSuccess) {
      std::printf("result %d\n", r);
      return 0;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::printf("result timeout\n");
      return 0;
    }
  }
  std::printf("result 0\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s PLUGIN recv BYTES | send BYTES HANDLE\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::vector<PluginApi> apis = loadPlugin(argv[1]);
  const PluginApi& api = apis.back();
  const std::string role = argv[2];
  std::vector<char> buffer(std::strtoull(argv[3], nullptr, 10), 'x');
  const Deadline deadline = deadlineIn(std::chrono::seconds(30));
  if (api.init() != kSuccess) return 3;
  void* request = nullptr;
  if (role == "recv") {
    char handle[kHandleMaxBytes] = {};
    void *listen = nullptr, *recv = nullptr, *mr = nullptr;
    if (api.listen(0, handle, &listen) != kSuccess) return 4;
    std::printf("handle ");
    for (unsigned char c : handle) std::printf("%02x", c);
    std::printf("\n");
    if (acceptUntilDone(api, listen, deadline, &recv) != kSuccess) return 5;
    void* data = buffer.data();
    size_t capacity = buffer.size();
    int tag = 0;
    if (postUntilTaken([&](void** q) { return api.irecv(recv, 1, &data, &capacity, &tag, &mr, q); }, deadline,
                       &request) != kSuccess) {
      return 6;
    }
  } else if (role == "send" && argc == 5 && std::strlen(argv[4]) == 2 * kHandleMaxBytes) {
    char handle[kHandleMaxBytes];
    for (int i = 0; i < kHandleMaxBytes; ++i) handle[i] = static_cast<char>(std::stoi(std::string(argv[4] + 2 * i, 2), nullptr, 16));
    void* send = nullptr;
    if (connectUntilDone(api, 0, handle, deadline, &send) != kSuccess) return 5;
    if (postUntilTaken([&](void** q) { return api.isend(send, buffer.data(), buffer.size(), 0, nullptr, q); },
                       deadline, &request) != kSuccess) {
      return 6;
    }
  } else {
    return 2;
  }
  std::printf("posted\n");
  return finish(api, request);
}
