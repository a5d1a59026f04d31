#include "nccl_plugin/plugin_driver.h"

namespace megascale::nccl_plugin {

namespace {
bool expired(Deadline deadline) { return std::chrono::steady_clock::now() >= deadline; }
}  // namespace

Result connectBothWays(const PluginApi& api, int dev, void* peer_handle, void* listen_comm, ConnectOrder order,
                       Deadline deadline, void** send_comm, void** recv_comm) {
  *send_comm = nullptr;
  *recv_comm = nullptr;
  bool connect_turn = order == ConnectOrder::kConnectFirst;
  while (*send_comm == nullptr || *recv_comm == nullptr) {
    if (expired(deadline)) return nccl_abi::kSystemError;
    Result r = nccl_abi::kSuccess;
    if (connect_turn && *send_comm == nullptr) r = api.connect(dev, peer_handle, send_comm);
    if (!connect_turn && *recv_comm == nullptr) r = api.accept(listen_comm, recv_comm);
    if (r != nccl_abi::kSuccess) return r;
    connect_turn = !connect_turn;
  }
  return nccl_abi::kSuccess;
}

Result connectUntilDone(const PluginApi& api, int dev, void* handle, Deadline deadline, void** send_comm) {
  *send_comm = nullptr;
  while (*send_comm == nullptr) {
    if (expired(deadline)) return nccl_abi::kSystemError;
    if (Result r = api.connect(dev, handle, send_comm); r != nccl_abi::kSuccess) return r;
  }
  return nccl_abi::kSuccess;
}

Result acceptUntilDone(const PluginApi& api, void* listen_comm, Deadline deadline, void** recv_comm) {
  *recv_comm = nullptr;
  while (*recv_comm == nullptr) {
    if (expired(deadline)) return nccl_abi::kSystemError;
    if (Result r = api.accept(listen_comm, recv_comm); r != nccl_abi::kSuccess) return r;
  }
  return nccl_abi::kSuccess;
}

Result postUntilTaken(const std::function<Result(void**)>& post, Deadline deadline, void** request) {
  *request = nullptr;
  while (*request == nullptr) {
    if (Result r = post(request); r != nccl_abi::kSuccess) return r;
    if (*request == nullptr && expired(deadline)) return nccl_abi::kSystemError;
  }
  return nccl_abi::kSuccess;
}

Result waitUntilDone(const PluginApi& api, void* request, int* sizes, Deadline deadline) {
  int done = 0;
  while (!done) {
    if (Result r = api.test(request, &done, sizes); r != nccl_abi::kSuccess) return r;
    if (!done && expired(deadline)) return nccl_abi::kSystemError;
  }
  return nccl_abi::kSuccess;
}

Result waitBothDone(const PluginApi& api, void* send_request, void* recv_request, int* recv_sizes, Deadline deadline) {
  int send_done = 0, recv_done = 0, sent = 0;
  while (!send_done || !recv_done) {
    if (expired(deadline)) return nccl_abi::kSystemError;
    if (!send_done) {
      if (Result r = api.test(send_request, &send_done, &sent); r != nccl_abi::kSuccess) return r;
    }
    if (!recv_done) {
      if (Result r = api.test(recv_request, &recv_done, recv_sizes); r != nccl_abi::kSuccess) return r;
    }
  }
  return nccl_abi::kSuccess;
}

}  // namespace megascale::nccl_plugin
