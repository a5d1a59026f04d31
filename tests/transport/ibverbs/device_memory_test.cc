// Registration and device memory on the ibverbs transport, run on the emulated RoCE device, with a memfd in
// place of a GPU's dma-buf (testbed/roce/fake_gpu_memory.h: any CPU copy to or from the "device" would crash).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "testbed/roce/fake_gpu_memory.h"
#include "transport/cuda_memory.h"
#include "transport/ibverbs/ib_transport_or_skip.h"
#include "transport/ibverbs/ib_transport.h"
#include "transport/ibverbs/transfer_registration.h"
#include "transport/net_transport.h"
#include "transport/transport_pair.h"

namespace megascale::transport {
namespace {

using testing::Pair;

std::vector<uint8_t> countingBytes(size_t size, uint8_t seed) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<uint8_t>(i * 7 + seed);
  return v;
}

// The registration a region holds on the transport's first NIC.
ibv_mr* railMr(const MemoryRegion& region) { return static_cast<const IbRegistration*>(region.handle)->mr[0]; }

class IbDeviceMemory : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = transportOptionsFromConfig();
    options_.secret = "secret";
    std::string why;
    transport_ = testing::ibTransportOrWhy(options_, &why);
    if (!transport_) GTEST_SKIP() << why;
  }

  // A pair whose receiving side may receive into device memory (no eager messages), or not.
  Pair connect(bool device_memory_receives) {
    TransportOptions o = options_;
    o.device_memory_receives = device_memory_receives;
    receiver_ = std::make_unique<IbTransport>(o);
    listener_ = receiver_->listen();
    Pair p;
    Status s = testing::connectPair(*transport_, *listener_, &p);
    if (!s.isOk()) throw Error(s.code(), s.message());
    return p;
  }

  TransportOptions options_;
  std::unique_ptr<IbTransport> transport_, receiver_;
  std::unique_ptr<Listener> listener_;
};

TEST_F(IbDeviceMemory, RegistrationsOfOneRangeShareOneMemoryRegionUntilTheLastGoes) {
  std::vector<uint8_t> buffer(3 * 4096);
  MemoryRegion a, b, inside;
  ASSERT_TRUE(transport_->registerMemory(buffer.data(), buffer.size(), kHostPointer, &a).isOk());
  ASSERT_TRUE(transport_->registerMemory(buffer.data(), buffer.size(), kHostPointer, &b).isOk());
  ASSERT_TRUE(transport_->registerMemory(buffer.data() + 100, 50, kHostPointer, &inside).isOk());
  EXPECT_EQ(railMr(a), railMr(b));
  EXPECT_EQ(railMr(a), railMr(inside));
  // A transfer from memory inside a kept registration uses it rather than registering again.
  IbDevice& device = *IbDevice::shared(IbSettings{});
  TransferRegistration transfer;
  ASSERT_TRUE(TransferRegistration::make(device, buffer.data() + 4096, 10, nullptr, &transfer).isOk());
  EXPECT_EQ(transfer.mr(), railMr(a));
  transfer.reset();
  transport_->deregisterMemory(&a);
  transport_->deregisterMemory(&inside);
  EXPECT_EQ(device.registrations().size(), 1u);  // b still holds it
  transport_->deregisterMemory(&b);
  EXPECT_EQ(device.registrations().size(), 0u);
  // Unregistered memory gets a registration of its own for the transfer, released with it.
  ASSERT_TRUE(TransferRegistration::make(device, buffer.data(), 10, nullptr, &transfer).isOk());
  EXPECT_NE(transfer.mr(), nullptr);
  EXPECT_EQ(device.registrations().size(), 0u);
}

TEST_F(IbDeviceMemory, RegisteredMemoryCarriesMessagesAfterAnotherRegistrationOfItWent) {
  Pair p = connect(false);
  std::vector<uint8_t> out = countingBytes(40000, 3), in(40000);
  MemoryRegion send_mr, send_again, recv_mr;
  ASSERT_TRUE(transport_->registerMemory(out.data(), out.size(), kHostPointer, &send_mr).isOk());
  ASSERT_TRUE(transport_->registerMemory(out.data(), out.size(), kHostPointer, &send_again).isOk());
  transport_->deregisterMemory(&send_again);
  ASSERT_TRUE(receiver_->registerMemory(in.data(), in.size(), kHostPointer, &recv_mr).isOk());
  Request *sreq = nullptr, *rreq = nullptr;
  void* data[1] = {in.data()};
  size_t capacity[1] = {in.size()};
  uint32_t tags[1] = {5};
  const MemoryRegion* mrs[1] = {&recv_mr};
  ASSERT_TRUE(p.recv->irecv(1, data, capacity, tags, mrs, &rreq).isOk());
  ASSERT_TRUE(p.send->isend(out.data(), out.size(), 5, &send_mr, &sreq).isOk());
  size_t sent = 0, received[1] = {};
  Status s = testing::completeBoth(p, sreq, rreq, &sent, received);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(received[0], out.size());
  EXPECT_EQ(in, out);
  transport_->deregisterMemory(&send_mr);
  receiver_->deregisterMemory(&recv_mr);
}

TEST_F(IbDeviceMemory, DeviceMemoryWithoutACudaDriverIsUnavailableAndSaysWhy) {
  if (CudaDriver::get().available()) GTEST_SKIP() << "a CUDA driver is present";
  std::vector<uint8_t> buffer(4096);
  MemoryRegion mr;
  Status s = transport_->registerMemory(buffer.data(), buffer.size(), kDevicePointer, &mr);
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable);
  EXPECT_NE(s.message().find("device memory"), std::string::npos) << s.message();
  EXPECT_FALSE(transport_->properties().pointer_kinds & kDevicePointer);
}

TEST_F(IbDeviceMemory, DmaBufMemoryReceivesSmallAndLargeMessagesWithoutACpuCopyAndFlushes) {
  ASSERT_TRUE(transport_->properties().dma_buf);
  Pair p = connect(true);
  testbed::FakeGpuMemory gpu(1 << 20);
  MemoryRegion gpu_mr;
  Status s = receiver_->registerDmaBuf(gpu.device(), 1 << 20, gpu.fd(), 0, &gpu_mr);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(gpu_mr.kind, kDevicePointer);
  const std::vector<uint8_t> small = countingBytes(100, 1), large = countingBytes(300000, 2);
  void* data[2] = {gpu.device(), gpu.device() + 4096};
  size_t capacity[2] = {4096, (1 << 20) - 4096};
  uint32_t tags[2] = {1, 2};
  const MemoryRegion* mrs[2] = {&gpu_mr, &gpu_mr};
  Request *rreq = nullptr, *s1 = nullptr, *s2 = nullptr;
  ASSERT_TRUE(p.send->isend(small.data(), small.size(), 1, nullptr, &s1).isOk());  // before the receive: it waits
  ASSERT_TRUE(p.send->isend(large.data(), large.size(), 2, nullptr, &s2).isOk());
  ASSERT_TRUE(p.recv->irecv(2, data, capacity, tags, mrs, &rreq).isOk());
  size_t sent = 0, received[2] = {};
  s = testing::completeBoth(p, s1, rreq, &sent, received);
  ASSERT_TRUE(s.isOk()) << s.message();
  s = testing::completeBoth(p, s2, nullptr, &sent, nullptr);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(received[0], small.size());
  EXPECT_EQ(received[1], large.size());
  EXPECT_EQ(0, std::memcmp(gpu.view(), small.data(), small.size()));
  EXPECT_EQ(0, std::memcmp(gpu.view() + 4096, large.data(), large.size()));
  // The flush: an RDMA READ through the NIC, completed by test().
  Request* flush = nullptr;
  ASSERT_TRUE(p.recv->iflush(2, data, received, mrs, &flush).isOk());
  ASSERT_NE(flush, nullptr);
  s = testing::completeBoth(p, nullptr, flush, nullptr, nullptr);
  EXPECT_TRUE(s.isOk()) << s.message();
  receiver_->deregisterMemory(&gpu_mr);
}

TEST_F(IbDeviceMemory, SmallMessagesFromDmaBufMemoryGoThroughTheNic) {
  Pair p = connect(false);
  testbed::FakeGpuMemory gpu(1 << 16);
  const std::vector<uint8_t> message = countingBytes(200, 9);
  std::memcpy(gpu.view(), message.data(), message.size());
  MemoryRegion gpu_mr;
  ASSERT_TRUE(transport_->registerDmaBuf(gpu.device(), 1 << 16, gpu.fd(), 0, &gpu_mr).isOk());
  std::vector<uint8_t> in(4096);
  void* data[1] = {in.data()};
  size_t capacity[1] = {in.size()};
  uint32_t tags[1] = {3};
  Request *sreq = nullptr, *rreq = nullptr;
  ASSERT_TRUE(p.send->isend(gpu.device(), message.size(), 3, &gpu_mr, &sreq).isOk());
  ASSERT_TRUE(p.recv->irecv(1, data, capacity, tags, nullptr, &rreq).isOk());
  size_t sent = 0, received[1] = {};
  Status s = testing::completeBoth(p, sreq, rreq, &sent, received);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_EQ(received[0], message.size());
  EXPECT_EQ(0, std::memcmp(in.data(), message.data(), message.size()));
  transport_->deregisterMemory(&gpu_mr);
}

TEST_F(IbDeviceMemory, HostMemoryNeedsNoFlush) {
  Pair p = connect(false);
  std::vector<uint8_t> buffer(64);
  void* data[1] = {buffer.data()};
  size_t sizes[1] = {buffer.size()};
  const MemoryRegion* mrs[1] = {nullptr};
  Request* flush = reinterpret_cast<Request*>(&buffer);
  ASSERT_TRUE(p.recv->iflush(1, data, sizes, mrs, &flush).isOk());
  EXPECT_EQ(flush, nullptr);
}

TEST_F(IbDeviceMemory, AnEagerMessageForDeviceMemoryIsAnErrorNotACrash) {
  Pair p = connect(false);  // the receiver did not say it receives into device memory: the sender goes eager
  testbed::FakeGpuMemory gpu(1 << 16);
  MemoryRegion gpu_mr;
  ASSERT_TRUE(receiver_->registerDmaBuf(gpu.device(), 1 << 16, gpu.fd(), 0, &gpu_mr).isOk());
  const std::vector<uint8_t> message = countingBytes(64, 4);
  void* data[1] = {gpu.device()};
  size_t capacity[1] = {4096};
  uint32_t tags[1] = {8};
  const MemoryRegion* mrs[1] = {&gpu_mr};
  Request *sreq = nullptr, *rreq = nullptr;
  ASSERT_TRUE(p.recv->irecv(1, data, capacity, tags, mrs, &rreq).isOk());
  ASSERT_TRUE(p.send->isend(message.data(), message.size(), 8, nullptr, &sreq).isOk());
  size_t sent = 0, received[1] = {};
  Status s = testing::completeBoth(p, sreq, rreq, &sent, received);
  EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.message();
  EXPECT_NE(s.message().find("device memory"), std::string::npos) << s.message();
  receiver_->deregisterMemory(&gpu_mr);
}

}  // namespace
}  // namespace megascale::transport
