// What the harness tests share: every version the built libnccl-net-megascale.so exports (loaded once, as
// NCCL does) and a fixture holding one connection of a version to itself.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nccl_plugin/plugin_driver.h"
#include "nccl_plugin/plugin_loader.h"

namespace megascale::nccl_plugin {

inline const std::vector<PluginApi>& allVersions() {
  // A traffic class for v10/v11 so their path to IP_TOS runs in every test.
  static const std::vector<PluginApi> apis = loadPlugin(MEGASCALE_NCCL_PLUGIN_PATH, LoaderOptions{0x28});
  return apis;
}

inline std::vector<std::string> versionNames() {
  std::vector<std::string> names;
  for (const auto& api : allVersions()) names.push_back(api.version);
  return names;
}

inline PluginApi versionNamed(const std::string& name) {
  for (const auto& api : allVersions()) {
    if (api.version == name) return api;
  }
  return {};
}

inline constexpr auto kTestTimeout = std::chrono::seconds(30);

class PluginConnection : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    api_ = versionNamed(GetParam());
    ASSERT_EQ(api_.init(), nccl_abi::kSuccess);
    ASSERT_EQ(api_.listen(0, handle_, &listen_), nccl_abi::kSuccess);
    ASSERT_NE(listen_, nullptr);
    ASSERT_EQ(connectBothWays(api_, 0, handle_, listen_, ConnectOrder::kConnectFirst, deadlineIn(kTestTimeout), &send_,
                              &recv_),
              nccl_abi::kSuccess);
  }
  void TearDown() override {
    if (send_ != nullptr) {
      EXPECT_EQ(api_.closeSend(send_), nccl_abi::kSuccess);
    }
    if (recv_ != nullptr) {
      EXPECT_EQ(api_.closeRecv(recv_), nccl_abi::kSuccess);
    }
    if (listen_ != nullptr) {
      EXPECT_EQ(api_.closeListen(listen_), nccl_abi::kSuccess);
    }
    EXPECT_EQ(api_.finalize(), nccl_abi::kSuccess);
  }

  void* post(const std::function<Result(void**)>& call) {
    void* request = nullptr;
    EXPECT_EQ(postUntilTaken(call, deadlineIn(kTestTimeout), &request), nccl_abi::kSuccess);
    return request;
  }
  void* postRecv(void* data, size_t capacity, int tag = 0, void* mr = nullptr) {
    return post([&](void** r) { return api_.irecv(recv_, 1, &data, &capacity, &tag, &mr, r); });
  }
  void* postSend(const void* data, size_t size, int tag = 0, void* mr = nullptr) {
    return post([&](void** r) { return api_.isend(send_, const_cast<void*>(data), size, tag, mr, r); });
  }

  /// Tests both until done (sends and receives progress only when tested); returns the received sizes.
  std::vector<int> complete(void* send_request, void* recv_request, int n) {
    std::vector<int> sizes(static_cast<size_t>(n), -1);
    EXPECT_EQ(waitBothDone(api_, send_request, recv_request, sizes.data(), deadlineIn(kTestTimeout)), nccl_abi::kSuccess)
        << "the transfer failed or did not complete in time";
    return sizes;
  }

  PluginApi api_;
  char handle_[nccl_abi::kHandleMaxBytes] = {};
  void* listen_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
};

}  // namespace megascale::nccl_plugin
