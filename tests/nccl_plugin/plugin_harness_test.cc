// The built libnccl-net-megascale.so driven like NCCL drives it, for every exported version: connection to
// itself on one thread, transfers of 0 B to 64 MiB with data checks, 32 requests in flight, grouped receives
// placed by tag, a receive larger than the send, a send larger than the receive, and misuse.
#include <gtest/gtest.h>

#include <chrono>
#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include "nccl_plugin/plugin_loader.h"

namespace megascale::nccl_plugin {
namespace {

using namespace nccl_abi;

std::vector<PluginApi> all() {
  static const std::vector<PluginApi> apis = loadPlugin(MEGASCALE_NCCL_PLUGIN_PATH, LoaderOptions{0x28});
  return apis;
}

std::vector<std::string> versions() {
  std::vector<std::string> names;
  for (const auto& api : all()) names.push_back(api.version);
  return names;
}

class PluginHarness : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (const auto& a : all()) {
      if (a.version == GetParam()) api_ = a;
    }
    ASSERT_EQ(api_.init(), kSuccess);
    // Listen, then poll connect and accept alternately on this one thread (NCCL's GDR probe does this).
    char handle[kHandleMaxBytes] = {};
    ASSERT_EQ(api_.listen(0, handle, &listen_), kSuccess);
    ASSERT_NE(listen_, nullptr);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((send_ == nullptr || recv_ == nullptr) && std::chrono::steady_clock::now() < deadline) {
      if (send_ == nullptr) {
        ASSERT_EQ(api_.connect(0, handle, &send_), kSuccess);
      }
      if (recv_ == nullptr) {
        ASSERT_EQ(api_.accept(listen_, &recv_), kSuccess);
      }
    }
    ASSERT_NE(send_, nullptr);
    ASSERT_NE(recv_, nullptr);
  }
  void TearDown() override {
    if (send_ != nullptr) {
      EXPECT_EQ(api_.closeSend(send_), kSuccess);
    }
    if (recv_ != nullptr) {
      EXPECT_EQ(api_.closeRecv(recv_), kSuccess);
    }
    if (listen_ != nullptr) {
      EXPECT_EQ(api_.closeListen(listen_), kSuccess);
    }
    EXPECT_EQ(api_.finalize(), kSuccess);
  }

  // Posts until the plugin takes the request (a null request means "not now").
  void* post(const std::function<Result(void**)>& call) {
    void* request = nullptr;
    for (int tries = 0; request == nullptr && tries < 100000; ++tries) EXPECT_EQ(call(&request), kSuccess);
    return request;
  }

  // Tests both until done; returns the received sizes.
  std::vector<int> complete(void* send_request, void* recv_request, int n) {
    int send_done = 0, recv_done = 0, sent = -1;
    std::vector<int> sizes(static_cast<size_t>(n), -1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while ((!send_done || !recv_done) && std::chrono::steady_clock::now() < deadline) {
      if (!send_done) {
        EXPECT_EQ(api_.test(send_request, &send_done, &sent), kSuccess);
      }
      if (!recv_done) {
        EXPECT_EQ(api_.test(recv_request, &recv_done, sizes.data()), kSuccess);
      }
    }
    EXPECT_TRUE(send_done && recv_done) << "transfer did not complete";
    return sizes;
  }

  PluginApi api_;
  void* listen_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
};

TEST_P(PluginHarness, NameAndPropertiesDescribeAHostDevice) {
  EXPECT_STREQ(api_.name, "megascale");
  int count = 0;
  ASSERT_EQ(api_.devices(&count), kSuccess);
  ASSERT_GT(count, 0);
  NetProperties p;
  ASSERT_EQ(api_.properties(0, &p), kSuccess);
  EXPECT_NE(p.name, nullptr);
  EXPECT_GT(p.speed_mbps, 0);
  EXPECT_EQ(p.max_recvs, 8);
  EXPECT_EQ(p.ptr_support, kPtrHost);
  EXPECT_NE(api_.properties(count, &p), kSuccess);
}

TEST_P(PluginHarness, TransfersFromZeroTo64MiBArriveIntactWithTheirSize) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20, size_t{64} << 20}) {
    std::vector<uint8_t> out(size), in(size + 100, 0);
    for (size_t i = 0; i < size; ++i) out[i] = static_cast<uint8_t>(i * 131 + size);
    void *send_mr = nullptr, *recv_mr = nullptr;
    ASSERT_EQ(api_.regMr(send_, out.data(), out.size(), kPtrHost, &send_mr), kSuccess);
    ASSERT_EQ(api_.regMr(recv_, in.data(), in.size(), kPtrHost, &recv_mr), kSuccess);
    void* data = in.data();
    size_t capacity = in.size();  // larger than the message: test() must report the real size
    int tag = 0;
    void* r = post([&](void** req) { return api_.irecv(recv_, 1, &data, &capacity, &tag, &recv_mr, req); });
    void* s = post([&](void** req) { return api_.isend(send_, out.data(), size, 0, send_mr, req); });
    auto sizes = complete(s, r, 1);
    EXPECT_EQ(sizes[0], static_cast<int>(size));
    EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin())) << size << " bytes";  // (memcmp: no null + 0)
    EXPECT_EQ(api_.deregMr(send_, send_mr), kSuccess);
    EXPECT_EQ(api_.deregMr(recv_, recv_mr), kSuccess);
  }
}

TEST_P(PluginHarness, ThirtyTwoRequestsInFlightMatchInPostingOrder) {
  constexpr int kCount = kMaxRequests;
  std::vector<std::vector<int>> out(kCount, std::vector<int>(256)), in(kCount, std::vector<int>(256));
  std::vector<void*> sends(kCount), recvs(kCount);
  for (int i = 0; i < kCount; ++i) {
    std::iota(out[i].begin(), out[i].end(), i * 1000);
    void* data = in[i].data();
    size_t capacity = 1024;
    int tag = 0;
    recvs[i] = post([&](void** req) { return api_.irecv(recv_, 1, &data, &capacity, &tag, nullptr, req); });
  }
  for (int i = 0; i < kCount; ++i) {
    sends[i] = post([&](void** req) { return api_.isend(send_, out[i].data(), 1024, 0, nullptr, req); });
  }
  for (int i = 0; i < kCount; ++i) complete(sends[i], recvs[i], 1);
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(in[i], out[i]) << "message " << i;
}

TEST_P(PluginHarness, GroupedReceivePlacesEachSendByTag) {
  std::vector<char> a(64, 0), b(64, 0);
  void* buffers[2] = {a.data(), b.data()};
  size_t capacity[2] = {64, 64};
  int tags[2] = {7, 9};
  void* r = post([&](void** req) { return api_.irecv(recv_, 2, buffers, capacity, tags, nullptr, req); });
  char nine[] = "for tag nine", seven[] = "seven";
  void* s9 = post([&](void** req) { return api_.isend(send_, nine, sizeof(nine), 9, nullptr, req); });
  void* s7 = post([&](void** req) { return api_.isend(send_, seven, sizeof(seven), 7, nullptr, req); });
  int done = 0, sent = 0;
  while (!done) ASSERT_EQ(api_.test(s9, &done, &sent), kSuccess);
  auto sizes = complete(s7, r, 2);
  EXPECT_STREQ(a.data(), "seven");
  EXPECT_STREQ(b.data(), "for tag nine");
  EXPECT_EQ(sizes[0], static_cast<int>(sizeof(seven)));
  EXPECT_EQ(sizes[1], static_cast<int>(sizeof(nine)));
}

TEST_P(PluginHarness, ASendLargerThanItsReceiveFailsTheReceive) {
  std::vector<char> out(2048, 'x'), in(1024);
  void* data = in.data();
  size_t capacity = in.size();
  int tag = 0;
  void* r = post([&](void** req) { return api_.irecv(recv_, 1, &data, &capacity, &tag, nullptr, req); });
  void* s = post([&](void** req) { return api_.isend(send_, out.data(), out.size(), 0, nullptr, req); });
  Result result = kSuccess;
  int done = 0, size = 0, sent_done = 0, sent = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (result == kSuccess && !done && std::chrono::steady_clock::now() < deadline) {
    if (!sent_done) api_.test(s, &sent_done, &sent);
    result = api_.test(r, &done, &size);
  }
  EXPECT_TRUE(result == kInvalidUsage || result == kSystemError || result == kInternalError) << result;
}

TEST_P(PluginHarness, MisuseGetsErrorCodesNotCrashes) {
  int done = 0;
  int not_a_request = 12345;
  EXPECT_EQ(api_.test(&not_a_request, &done, nullptr), kInternalError);
  EXPECT_EQ(api_.test(nullptr, &done, nullptr), kInternalError);
  void* request = nullptr;
  char buffer[8];
  EXPECT_EQ(api_.isend(listen_, buffer, 8, 0, nullptr, &request), kInternalError);  // a listen comm is no send comm
  char garbage[kHandleMaxBytes];
  std::memset(garbage, 0x5a, sizeof(garbage));
  void* comm = nullptr;
  EXPECT_EQ(api_.connect(0, garbage, &comm), kInternalError);
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(api_.listen(99, garbage, &comm), kInternalError);
  void* mr = nullptr;
  EXPECT_EQ(api_.regMr(send_, buffer, 8, kPtrCuda, &mr), kInternalError);  // host memory only
}

INSTANTIATE_TEST_SUITE_P(Versions, PluginHarness, ::testing::ValuesIn(versions()),
                         [](const auto& info) { return info.param; });

TEST(PluginLibrary, ExportsEveryVersionFromV8ToV11) {
  EXPECT_EQ(versions(), (std::vector<std::string>{"v8", "v9", "v10", "v11"}));
}

// The declared layouts, from NCCL's documented field lists (a mismatch here would corrupt NCCL's view).
TEST(PluginAbi, PropertiesLayoutsMatchTheDocumentedFieldOrder) {
  EXPECT_EQ(offsetof(PropertiesV8, speed), 32u);
  EXPECT_EQ(sizeof(PropertiesV8), 64u);
  EXPECT_EQ(offsetof(PropertiesV9, vprops), 64u);
  EXPECT_EQ(offsetof(PropertiesV9, max_p2p_bytes), 88u);
  EXPECT_EQ(sizeof(PropertiesV9), 104u);
  EXPECT_EQ(offsetof(PropertiesV11, max_multi_request_size), 104u);
  EXPECT_EQ(offsetof(NetV11, finalize), offsetof(NetV11, makeVDevice) + sizeof(void*));
  EXPECT_EQ(sizeof(NetV8), 19 * sizeof(void*));
  EXPECT_EQ(sizeof(NetV11), 22 * sizeof(void*));
}

}  // namespace
}  // namespace megascale::nccl_plugin
