// The built libnccl-net-megascale.so driven like NCCL drives it, in one process, for every exported version:
// connection to itself in both orders and across threads, transfers of 0 B to 1 GiB with data checks, 32
// requests in flight, grouped receives placed by tag, receives larger and smaller than the send, closing with
// requests in flight, several communicators on several threads, and misuse.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "plugin_fixture.h"
#include "testbed/roce/fake_gpu_memory.h"

namespace megascale::nccl_plugin {
namespace {

using namespace nccl_abi;

class PluginHarness : public PluginConnection {};

std::vector<uint8_t> pattern(size_t size, uint64_t seed) {
  std::vector<uint8_t> bytes(size);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < size; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(bytes.data() + i, &x, std::min<size_t>(8, size - i));
  }
  return bytes;
}

TEST_P(PluginHarness, NameAndPropertiesDescribeAHostDevice) {
  EXPECT_STREQ(api_.name, "megascale");
  int count = 0;
  ASSERT_EQ(api_.devices(&count), kSuccess);
  ASSERT_GT(count, 0);
  for (int dev = 0; dev < count; ++dev) {
    NetProperties p;
    ASSERT_EQ(api_.properties(dev, &p), kSuccess);
    ASSERT_NE(p.name, nullptr);
    EXPECT_GT(p.speed_mbps, 0);
    EXPECT_EQ(p.max_recvs, 8);
    EXPECT_EQ(p.ptr_support, kPtrHost);
    EXPECT_EQ(p.vprops.ndevs, 1) << "a physical device merges only itself";
    EXPECT_EQ(p.vprops.devs[0], dev);
    for (int other = 0; other < dev; ++other) {  // NCCL tells NICs apart by guid, a NIC's ports by port
      NetProperties q;
      ASSERT_EQ(api_.properties(other, &q), kSuccess);
      EXPECT_TRUE(p.guid != q.guid || p.port != q.port) << p.name << " and " << q.name;
    }
  }
  NetProperties p;
  EXPECT_EQ(api_.properties(count, &p), kInternalError);
  EXPECT_EQ(api_.properties(-1, &p), kInternalError);
}

// Which network transport the plugin runs on in this ctest entry (MEGASCALE_TRANSPORT).
bool transportTakesDmaBuf() {
  const char* t = std::getenv("MEGASCALE_TRANSPORT");
  return t != nullptr && (std::string(t) == "ib" || std::string(t) == "ibverbs");
}

// NCCL fuses NICs with makeVDevice (v9+): the transport's own NICs merge (nccl_plugin.rails moves data over a
// fused device); a socket transport's interfaces do not; malformed sets are refused, never a crash.
TEST_P(PluginHarness, VirtualDevicesMergeDistinctPhysicalNicsOfATransportThatDrivesThem) {
  if (!api_.makeVDevice) GTEST_SKIP() << api_.version << " has no makeVDevice";
  int count = 0, d = -1;
  ASSERT_EQ(api_.devices(&count), kSuccess);
  VirtualDeviceProps props{1, {0}};
  EXPECT_EQ(api_.makeVDevice(nullptr, &props), kInternalError);
  EXPECT_EQ(api_.makeVDevice(&d, nullptr), kInternalError);
  if (!transportTakesDmaBuf()) {  // tcp: interfaces the host's routes choose between, no NICs of its own
    EXPECT_EQ(api_.makeVDevice(&d, &props), kInvalidUsage);
    return;
  }
  EXPECT_EQ(api_.makeVDevice(&d, &props), kSuccess);
  EXPECT_EQ(d, 0) << "one device merged is itself";
  for (VirtualDeviceProps bad : {VirtualDeviceProps{0, {0}}, VirtualDeviceProps{5, {0}}, VirtualDeviceProps{2, {0, 0}},
                                 VirtualDeviceProps{1, {count}}, VirtualDeviceProps{1, {-1}}}) {
    EXPECT_EQ(api_.makeVDevice(&d, &bad), kInvalidArgument) << bad.ndevs << " devices from " << bad.devs[0];
  }
  int after = 0;
  ASSERT_EQ(api_.devices(&after), kSuccess);
  EXPECT_EQ(after, count) << "a refused merge adds no device";
}

// NCCL hands GPU buffers as dma-buf descriptors (regMrDmaBuf) and flushes each receive into them (iflush). A memfd
// plays the GPU (testbed/roce/fake_gpu_memory.h): the NIC must move every byte, no CPU copy may touch it.
TEST_P(PluginHarness, DmaBufMemoryReceivesAndIsFlushedWhereTheTransportTakesIt) {
  testbed::FakeGpuMemory gpu(1 << 20);
  void* mr = nullptr;
  const Result registered = api_.regMrDmaBuf(recv_, gpu.device(), gpu.size(), kPtrCuda, 0, gpu.fd(), &mr);
  if (!transportTakesDmaBuf()) {
    EXPECT_NE(registered, kSuccess);  // a socket transport cannot reach device memory: refused, not crashed
    return;
  }
  ASSERT_EQ(registered, kSuccess);
  for (size_t size : {size_t{100}, size_t{200000}}) {
    const std::vector<uint8_t> data = pattern(size, size);
    void* recv_request = postRecv(gpu.device(), gpu.size(), 1, mr);
    void* send_request = postSend(data.data(), size, 1);
    EXPECT_EQ(complete(send_request, recv_request, 1)[0], static_cast<int>(size));
    EXPECT_EQ(0, std::memcmp(gpu.view(), data.data(), size)) << size << " bytes";
    void* buffer = gpu.device();
    int received = static_cast<int>(size);
    void* flush = nullptr;
    ASSERT_EQ(api_.iflush(recv_, 1, &buffer, &received, &mr, &flush), kSuccess);
    ASSERT_NE(flush, nullptr) << "a receive into device memory needs a flush";
    EXPECT_EQ(waitUntilDone(api_, flush, nullptr, deadlineIn(kTestTimeout)), kSuccess);
  }
  EXPECT_EQ(api_.deregMr(recv_, mr), kSuccess);
}

TEST_P(PluginHarness, HostMemoryNeedsNoFlush) {
  std::vector<uint8_t> host(64);
  void* buffer = host.data();
  int size = 64;
  void* mr = nullptr;
  ASSERT_EQ(api_.regMr(recv_, buffer, host.size(), kPtrHost, &mr), kSuccess);
  void* flush = &host;
  ASSERT_EQ(api_.iflush(recv_, 1, &buffer, &size, &mr, &flush), kSuccess);
  EXPECT_EQ(flush, nullptr);
  EXPECT_EQ(api_.deregMr(recv_, mr), kSuccess);
}

TEST_P(PluginHarness, ConnectsToItselfWithAcceptPolledFirst) {
  char handle[kHandleMaxBytes] = {};
  void *listen = nullptr, *send = nullptr, *recv = nullptr;
  ASSERT_EQ(api_.listen(0, handle, &listen), kSuccess);
  ASSERT_EQ(
      connectBothWays(api_, 0, handle, listen, ConnectOrder::kAcceptFirst, deadlineIn(kTestTimeout), &send, &recv),
      kSuccess);
  EXPECT_EQ(api_.closeSend(send), kSuccess);
  EXPECT_EQ(api_.closeRecv(recv), kSuccess);
  EXPECT_EQ(api_.closeListen(listen), kSuccess);
}

TEST_P(PluginHarness, ConnectsAcrossThreadsAndListensForSeveralPeers) {
  constexpr int kPeers = 3;
  std::vector<void*> sends(kPeers), recvs(kPeers);
  std::vector<Result> results(kPeers);
  std::vector<std::thread> connectors;
  for (int i = 0; i < kPeers; ++i) {
    connectors.emplace_back([&, i] {
      char handle[kHandleMaxBytes];
      std::memcpy(handle, handle_, sizeof(handle));  // each connect keeps its own copy, as NCCL's peers do
      results[i] = connectUntilDone(api_, 0, handle, deadlineIn(kTestTimeout), &sends[i]);
    });
  }
  for (int i = 0; i < kPeers; ++i) ASSERT_EQ(acceptUntilDone(api_, listen_, deadlineIn(kTestTimeout), &recvs[i]), kSuccess);
  for (auto& t : connectors) t.join();
  for (int i = 0; i < kPeers; ++i) ASSERT_EQ(results[i], kSuccess);
  for (int i = 0; i < kPeers; ++i) {
    EXPECT_EQ(api_.closeSend(sends[i]), kSuccess);
    EXPECT_EQ(api_.closeRecv(recvs[i]), kSuccess);
  }
}

TEST_P(PluginHarness, TransfersFromZeroTo64MiBArriveIntactWithTheirSize) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{8}, size_t{4095}, size_t{1} << 20, size_t{64} << 20}) {
    std::vector<uint8_t> out = pattern(size, size), in(size + 100, 0);
    void *send_mr = nullptr, *recv_mr = nullptr;
    ASSERT_EQ(api_.regMr(send_, out.data(), out.size(), kPtrHost, &send_mr), kSuccess);
    ASSERT_EQ(api_.regMr(recv_, in.data(), in.size(), kPtrHost, &recv_mr), kSuccess);
    void* r = postRecv(in.data(), in.size(), 0, recv_mr);  // larger than the message: test() gives the real size
    void* s = postSend(out.data(), size, 0, send_mr);
    auto sizes = complete(s, r, 1);
    EXPECT_EQ(sizes[0], static_cast<int>(size));
    EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin())) << size << " bytes";  // (memcmp: no null + 0)
    EXPECT_EQ(api_.deregMr(send_, send_mr), kSuccess);
    EXPECT_EQ(api_.deregMr(recv_, recv_mr), kSuccess);
  }
}

// 2 GiB of buffers: too much for the sanitizer builds' shadow memory. They stop at 128 MiB (256 MiB cost 11 s under
// ThreadSanitizer, most of it faulting in fresh shadow), twice the largest transfer of the versions' own test.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr size_t kLargestTransfer = size_t{128} << 20;
#else
constexpr size_t kLargestTransfer = size_t{1} << 30;
#endif

TEST_P(PluginHarness, AOneGiBTransferArrivesIntact) {
  // Every ABI version forwards to one data path; one version moving the gigabyte checks it (20 s each).
  if (GetParam() != versionNames().back()) GTEST_SKIP() << "the newest version checks the shared data path";
  std::vector<uint8_t> out = pattern(kLargestTransfer, 7), in(kLargestTransfer, 0);
  void* r = postRecv(in.data(), in.size());
  void* s = postSend(out.data(), out.size());
  auto sizes = complete(s, r, 1);
  EXPECT_EQ(static_cast<size_t>(sizes[0]), kLargestTransfer);
  EXPECT_TRUE(out == in);
}

TEST_P(PluginHarness, ThirtyTwoRequestsInFlightMatchInPostingOrder) {
  constexpr int kCount = kMaxRequests;
  std::vector<std::vector<int>> out(kCount, std::vector<int>(256)), in(kCount, std::vector<int>(256));
  std::vector<void*> sends(kCount), recvs(kCount);
  for (int i = 0; i < kCount; ++i) {
    std::iota(out[i].begin(), out[i].end(), i * 1000);
    recvs[i] = postRecv(in[i].data(), 1024);
  }
  for (int i = 0; i < kCount; ++i) sends[i] = postSend(out[i].data(), 1024);
  for (int i = 0; i < kCount; ++i) complete(sends[i], recvs[i], 1);
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(in[i], out[i]) << "message " << i;
}

TEST_P(PluginHarness, AThirtyThirdRequestWaitsForAFreeSlot) {
  std::vector<char> buffer(kMaxRequests * 16);
  std::vector<void*> recvs;
  for (int i = 0; i < kMaxRequests; ++i) recvs.push_back(postRecv(buffer.data() + i * 16, 16));
  void* extra = nullptr;
  char spare[16];
  void* data = spare;
  size_t capacity = sizeof(spare);
  int tag = 0;
  void* mr = nullptr;
  EXPECT_EQ(api_.irecv(recv_, 1, &data, &capacity, &tag, &mr, &extra), kSuccess);
  EXPECT_EQ(extra, nullptr) << "a 33rd receive must be refused with a null request, not an error";
  // Closing (in TearDown) with every slot in flight must free them (the ASan build checks for leaks).
}

TEST_P(PluginHarness, ClosingCommsWithRequestsInFlightFreesThem) {
  std::vector<char> in(4096), out(1 << 20, 'x');
  for (int i = 0; i < 4; ++i) postRecv(in.data() + i * 1024, 1024);
  postSend(out.data(), out.size());  // larger than its receive, never completes
  EXPECT_EQ(api_.closeRecv(recv_), kSuccess);
  EXPECT_EQ(api_.closeSend(send_), kSuccess);
  recv_ = send_ = nullptr;
}

TEST_P(PluginHarness, GroupedReceivePlacesEachSendByTagUpToMaxRecvs) {
  constexpr int kGroup = 8;  // maxRecvs
  std::vector<std::vector<char>> buffers(kGroup, std::vector<char>(64, 0));
  void* data[kGroup];
  size_t capacity[kGroup];
  int tags[kGroup];
  for (int i = 0; i < kGroup; ++i) {
    data[i] = buffers[i].data();
    capacity[i] = 64;
    tags[i] = 100 + i * 3;
  }
  void* r = post([&](void** req) { return api_.irecv(recv_, kGroup, data, capacity, tags, nullptr, req); });
  std::vector<std::string> messages;
  std::vector<void*> sends;
  for (int i = kGroup - 1; i >= 0; --i) messages.push_back("message for tag " + std::to_string(tags[i]));
  for (int k = 0; k < kGroup; ++k) {  // posted in reverse tag order
    const std::string& m = messages[k];
    sends.push_back(postSend(m.c_str(), m.size() + 1, tags[kGroup - 1 - k]));
  }
  for (int k = 0; k + 1 < kGroup; ++k) ASSERT_EQ(waitUntilDone(api_, sends[k], nullptr, deadlineIn(kTestTimeout)), kSuccess);
  auto sizes = complete(sends.back(), r, kGroup);
  for (int i = 0; i < kGroup; ++i) {
    const std::string expected = "message for tag " + std::to_string(tags[i]);
    EXPECT_STREQ(buffers[i].data(), expected.c_str());
    EXPECT_EQ(sizes[i], static_cast<int>(expected.size() + 1));
  }
}

TEST_P(PluginHarness, ASendLargerThanItsReceiveFailsTheReceive) {
  std::vector<char> out(2048, 'x'), in(1024);
  void* r = postRecv(in.data(), in.size());
  void* s = postSend(out.data(), out.size());
  Result result = kSuccess;
  int done = 0, size = 0, sent_done = 0, sent = 0;
  const Deadline deadline = deadlineIn(kTestTimeout);
  while (result == kSuccess && !done && std::chrono::steady_clock::now() < deadline) {
    if (!sent_done) api_.test(s, &sent_done, &sent);
    result = api_.test(r, &done, &size);
  }
  EXPECT_EQ(result, kInvalidUsage);
  // The send may still be in flight (udp resends until the receiver acknowledges): as NCCL does, the comms
  // close before their buffers go.
  EXPECT_EQ(api_.closeSend(send_), kSuccess);
  EXPECT_EQ(api_.closeRecv(recv_), kSuccess);
  recv_ = send_ = nullptr;
}

TEST_P(PluginHarness, SeveralCommunicatorsOnSeveralThreadsMoveTheirOwnData) {
  constexpr int kThreads = 4, kRounds = 20;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      char handle[kHandleMaxBytes] = {};
      void *listen = nullptr, *send = nullptr, *recv = nullptr;
      const Deadline deadline = deadlineIn(kTestTimeout);
      if (api_.listen(0, handle, &listen) != kSuccess ||
          connectBothWays(api_, 0, handle, listen, ConnectOrder::kConnectFirst, deadline, &send, &recv) != kSuccess) {
        failures[t] = -1;
        return;
      }
      for (int round = 0; round < kRounds; ++round) {
        const size_t size = size_t{1000} << (round % 10);
        std::vector<uint8_t> out = pattern(size, t * 100 + round), in(size);
        void *data = in.data(), *s = nullptr, *r = nullptr;
        size_t capacity = size;
        int tag = t, received = -1;
        void* mr = nullptr;
        const bool ok =
            postUntilTaken([&](void** q) { return api_.irecv(recv, 1, &data, &capacity, &tag, &mr, q); }, deadline,
                           &r) == kSuccess &&
            postUntilTaken([&](void** q) { return api_.isend(send, out.data(), size, t, nullptr, q); }, deadline, &s) ==
                kSuccess &&
            waitBothDone(api_, s, r, &received, deadline) == kSuccess;
        if (!ok || received != static_cast<int>(size) || in != out) ++failures[t];
      }
      api_.closeSend(send);
      api_.closeRecv(recv);
      api_.closeListen(listen);
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST_P(PluginHarness, ConnectingToAClosedListenerFailsInsteadOfHanging) {
  char handle[kHandleMaxBytes] = {};
  void* listen = nullptr;
  ASSERT_EQ(api_.listen(0, handle, &listen), kSuccess);
  ASSERT_EQ(api_.closeListen(listen), kSuccess);
  void* send = nullptr;
  EXPECT_EQ(connectUntilDone(api_, 0, handle, deadlineIn(kTestTimeout), &send), kSystemError);
  EXPECT_EQ(send, nullptr);
}

TEST_P(PluginHarness, AHandleWithAWrongSecretIsRefused) {
  char handle[kHandleMaxBytes];
  std::memcpy(handle, handle_, sizeof(handle));
  handle[8] = handle[8] == 'a' ? 'b' : 'a';  // one hex digit of the listener's secret
  void* send = nullptr;
  void* recv = nullptr;
  Result connected = kSuccess;
  const Deadline deadline = deadlineIn(std::chrono::seconds(10));
  while (connected == kSuccess && send == nullptr && std::chrono::steady_clock::now() < deadline) {
    connected = api_.connect(0, handle, &send);
    ASSERT_EQ(api_.accept(listen_, &recv), kSuccess);  // the listener drops the impostor and stays up
    ASSERT_EQ(recv, nullptr);
  }
  EXPECT_NE(connected, kSuccess);
  EXPECT_EQ(send, nullptr);
}

TEST_P(PluginHarness, MisuseGetsErrorCodesNotCrashes) {
  int done = 0;
  int not_a_request = 12345;
  EXPECT_EQ(api_.test(&not_a_request, &done, nullptr), kInternalError);
  EXPECT_EQ(api_.test(nullptr, &done, nullptr), kInternalError);
  void* request = nullptr;
  char buffer[8];
  EXPECT_EQ(api_.isend(listen_, buffer, 8, 0, nullptr, &request), kInternalError);  // a listen comm is no send comm
  EXPECT_EQ(api_.isend(recv_, buffer, 8, 0, nullptr, &request), kInternalError);
  EXPECT_EQ(api_.isend(nullptr, buffer, 8, 0, nullptr, &request), kInternalError);
  void* data = buffer;
  size_t capacity = 8;
  int tag = 0;
  EXPECT_EQ(api_.irecv(recv_, 0, &data, &capacity, &tag, nullptr, &request), kInternalError);  // n < 1
  EXPECT_EQ(api_.irecv(recv_, 9, &data, &capacity, &tag, nullptr, &request), kInternalError);  // n > maxRecvs
  EXPECT_EQ(api_.irecv(send_, 1, &data, &capacity, &tag, nullptr, &request), kInternalError);
  char garbage[kHandleMaxBytes];
  std::memset(garbage, 0x5a, sizeof(garbage));
  void* comm = nullptr;
  EXPECT_EQ(api_.connect(0, garbage, &comm), kInternalError);
  EXPECT_EQ(comm, nullptr);
  EXPECT_EQ(api_.connect(99, handle_, &comm), kInternalError);
  EXPECT_EQ(api_.listen(99, garbage, &comm), kInternalError);
  EXPECT_EQ(api_.accept(send_, &comm), kInternalError);
  void* mr = nullptr;
  NetProperties props;
  ASSERT_EQ(api_.properties(0, &props), kSuccess);
  if (!(props.ptr_support & kPtrCuda)) {  // device memory where the device cannot reach it: refused
    EXPECT_NE(api_.regMr(send_, buffer, 8, kPtrCuda, &mr), kSuccess);
  }
  // A finished request is no longer active.
  void* r = postRecv(buffer, 8);
  void* s = postSend("1234567", 8);
  complete(s, r, 1);
  EXPECT_EQ(api_.test(r, &done, nullptr), kInternalError);
}

INSTANTIATE_TEST_SUITE_P(Versions, PluginHarness, ::testing::ValuesIn(versionNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace megascale::nccl_plugin
