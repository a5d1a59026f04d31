// The fake device (collectives/memory/fake_device.h): addresses the host cannot touch, an allocator that reuses and
// merges what is freed, and an engine that runs queued items out of order, later, bit for bit as the host kernels.
#include "collectives/memory/fake_device.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/dtype.h"
#include "collectives/reduce_kernels.h"

namespace megascale::memory {
namespace {

// The protection of the mapping that holds `p`, from /proc/self/maps ("---p" for none).
std::string protectionOf(const void* p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const auto at = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms;
    fields >> range >> perms;
    const uintptr_t begin = std::stoull(range.substr(0, range.find('-')), nullptr, 16);
    const uintptr_t end = std::stoull(range.substr(range.find('-') + 1), nullptr, 16);
    if (at >= begin && at < end) return perms;
  }
  return "";
}

TEST(FakeDeviceTest, ItsAddressesAreNoHostMemory) {
  FakeDeviceSpace space(1 << 20);
  void* p = space.allocate(4096);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(space.contains(p));
  EXPECT_EQ(protectionOf(p), "---p");  // a host load or store there faults
  std::vector<uint8_t> host(16);
  EXPECT_FALSE(space.contains(host.data()));
  EXPECT_EQ(space.reach(host.data()), host.data());
}

TEST(FakeDeviceTest, FreedRangesAreReusedAndMerged) {
  FakeDeviceSpace space(1 << 20);
  void* a = space.allocate(100000);
  void* b = space.allocate(100000);
  void* c = space.allocate(100000);
  ASSERT_TRUE(a && b && c);
  space.release(b);
  EXPECT_EQ(space.allocate(100000), b);
  EXPECT_EQ(space.allocate(size_t{1} << 20), nullptr);  // full
  space.release(a);
  space.release(b);
  space.release(c);
  void* whole = space.allocate(size_t{1} << 20);
  EXPECT_EQ(whole, a) << "the free ranges merged back into one";
}

TEST(FakeDeviceTest, SpaceOfFindsItOnlyWhileRegistered) {
  auto space = std::make_unique<FakeDeviceSpace>(1 << 16);
  void* p = space->allocate(64);
  MemorySpace* found = nullptr;
  ASSERT_TRUE(spaceOf(p, &found).isOk());
  EXPECT_EQ(found, nullptr);
  registerSpace(space.get());
  ASSERT_TRUE(spaceOf(p, &found).isOk());
  EXPECT_EQ(found, space.get());
  EXPECT_TRUE(onDevice({p}));
  EXPECT_TRUE(onDevice({nullptr, p}));
  std::vector<uint8_t> host(8);
  EXPECT_FALSE(onDevice({host.data(), nullptr}));
  space.reset();  // unregisters itself
  ASSERT_TRUE(spaceOf(p, &found).isOk());
  EXPECT_EQ(found, nullptr);
}

// Every dtype and op: the engine's reduction of device operands equals the host kernel's, bit for bit.
TEST(FakeDeviceTest, ReductionsEqualTheHostKernelsBitForBit) {
  FakeDeviceSpace& space = fakeDevice();
  std::unique_ptr<EngineQueue> queue;
  ASSERT_TRUE(space.openQueue(&queue).isOk());
  const size_t n = 1037;
  for (int t = 0; t < mscNumTypes; ++t) {
    const auto type = static_cast<mscDataType_t>(t);
    const size_t bytes = n * dtypeSize(type);
    std::vector<uint8_t> a(bytes), b(bytes), want(bytes), got(bytes);
    for (size_t i = 0; i < bytes; ++i) {
      a[i] = static_cast<uint8_t>(i * 37 + 11);
      b[i] = static_cast<uint8_t>(i * 91 + 5);
    }
    void* da = space.allocate(bytes);
    void* db = space.allocate(bytes);
    void* dd = space.allocate(bytes);
    ASSERT_TRUE(copyBlocking(da, a.data(), bytes).isOk());
    ASSERT_TRUE(copyBlocking(db, b.data(), bytes).isOk());
    for (int o = 0; o < mscNumOps; ++o) {
      const auto op = static_cast<mscRedOp_t>(o);
      reduceElements(type, op, want.data(), a.data(), b.data(), n);
      uint64_t ticket = 0;
      ASSERT_TRUE(queue->reduce(type, op, dd, da, db, n, &ticket).isOk());
      ASSERT_TRUE(queue->drain(std::chrono::seconds(60)).isOk());
      bool done = false;
      ASSERT_TRUE(queue->test(ticket, &done).isOk());
      EXPECT_TRUE(done);
      ASSERT_TRUE(copyBlocking(got.data(), dd, bytes).isOk());
      EXPECT_EQ(std::memcmp(want.data(), got.data(), bytes), 0) << dtypeName(type) << " " << opName(op);
    }
    space.release(da);
    space.release(db);
    space.release(dd);
  }
}

// Items finish later, in an order of the engine's choosing; each ticket reports its own item.
TEST(FakeDeviceTest, EachTicketReportsItsOwnItem) {
  FakeDeviceSpace& space = fakeDevice();
  std::unique_ptr<EngineQueue> queue;
  ASSERT_TRUE(space.openQueue(&queue).isOk());
  const int items = 64;
  std::vector<uint32_t> host(items);
  auto* device = static_cast<uint32_t*>(space.allocate(items * sizeof(uint32_t)));
  std::vector<uint32_t> values(items);
  std::vector<uint64_t> tickets(items);
  for (int i = 0; i < items; ++i) {
    values[static_cast<size_t>(i)] = static_cast<uint32_t>(i * 3 + 1);
    ASSERT_TRUE(queue->copy(device + i, &values[static_cast<size_t>(i)], sizeof(uint32_t), &tickets[static_cast<size_t>(i)]).isOk());
  }
  std::vector<bool> seen(items, false);
  int finished = 0;
  while (finished < items) {
    for (int i = 0; i < items; ++i) {
      if (seen[static_cast<size_t>(i)]) continue;
      bool done = false;
      ASSERT_TRUE(queue->test(tickets[static_cast<size_t>(i)], &done).isOk());
      if (done) {
        seen[static_cast<size_t>(i)] = true;
        ++finished;
      }
    }
  }
  ASSERT_TRUE(copyBlocking(host.data(), device, items * sizeof(uint32_t)).isOk());
  EXPECT_EQ(host, values);
  space.release(device);
}

}  // namespace
}  // namespace megascale::memory
