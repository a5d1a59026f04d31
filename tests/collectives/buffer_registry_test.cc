// Registered buffers (mscCommRegister): over RDMA (the emulated RoCE device, testbed/roce) a training loop's
// steady state makes no memory registration, where unregistered buffers make one per transfer; over any transport
// registrations come and go by handle and bad ones are errors naming the rank.
#include "collectives/buffer_registry.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "collectives/communicator.h"
#include "local_job.h"
#include "transport/registry.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

CommunicatorOptions optionsFor(const std::string& transport) {
  CommunicatorOptions o;
  o.timeout = 30s;
  o.transport = transport;
  o.transport_options.handshake_timeout_ms = 30000;
  return o;
}

bool rdmaDeviceUp() {
  const transport::TransportInfo* ib = transport::findTransport("ibverbs");
  return ib != nullptr && ib->missing == nullptr && ib->chosen_by_auto != nullptr && ib->chosen_by_auto();
}

// 1 MiB of floats: past the eager size, so every transfer of the ring needs its buffer registered.
constexpr size_t kCount = 256 * 1024;

void allReduceChecked(Communicator& comm, const std::vector<float>& in, std::vector<float>& out, int nranks) {
  ASSERT_TRUE(comm.allReduce(in.data(), out.data(), in.size(), mscFloat32, mscSum)->wait(30s).isOk());
  const float want = static_cast<float>(nranks * (nranks + 1) / 2);
  ASSERT_EQ(out.front(), want);
  ASSERT_EQ(out.back(), want);
}

TEST(RegisteredBuffers, SteadyStateMakesNoRegistrationOverRdma) {
  if (!rdmaDeviceUp()) GTEST_SKIP() << "no RDMA device (ctest runs this on the emulated RoCE device)";
  test_support::LocalJob job;
  constexpr int kRanks = 2;
  std::vector<uint64_t> registered_loop(kRanks), unregistered_loop(kRanks);
  job.runRanks(kRanks, optionsFor("ibverbs"), [&](int rank, const std::shared_ptr<Communicator>& comm) {
    std::vector<float> in(kCount, static_cast<float>(rank + 1)), out(kCount);
    void *in_handle = nullptr, *out_handle = nullptr;
    ASSERT_TRUE(comm->registerBuffer(in.data(), in.size() * sizeof(float), &in_handle).isOk());
    ASSERT_TRUE(comm->registerBuffer(out.data(), out.size() * sizeof(float), &out_handle).isOk());
    // The ranks are threads sharing the emulated device, whose count is the process's: each rank reads it between
    // barriers (small messages: sent eagerly, no registration), so no other rank's setup falls into its window.
    const auto barrier = [&] { ASSERT_TRUE(comm->barrier()->wait(30s).isOk()); };
    allReduceChecked(*comm, in, out, kRanks);  // connects, sizes and registers the scratch
    barrier();
    const uint64_t before = comm->registrationsMade();
    for (int i = 0; i < 5; ++i) allReduceChecked(*comm, in, out, kRanks);
    barrier();
    registered_loop[static_cast<size_t>(rank)] = comm->registrationsMade() - before;
    barrier();
    ASSERT_TRUE(comm->deregisterBuffer(in_handle).isOk());
    ASSERT_TRUE(comm->deregisterBuffer(out_handle).isOk());
    // The same loop on buffers nobody registered: each transfer registers its buffer for itself.
    std::vector<float> in2(kCount, static_cast<float>(rank + 1)), out2(kCount);
    const uint64_t unregistered_before = comm->registrationsMade();
    for (int i = 0; i < 5; ++i) allReduceChecked(*comm, in2, out2, kRanks);
    unregistered_loop[static_cast<size_t>(rank)] = comm->registrationsMade() - unregistered_before;
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(registered_loop[static_cast<size_t>(r)], 0u) << "rank " << r << " registered memory in its steady state";
    EXPECT_GE(unregistered_loop[static_cast<size_t>(r)], 5u) << "rank " << r << ": unregistered transfers counted";
  }
}

TEST(RegisteredBuffers, HandlesComeAndGoAndBadOnesAreErrorsNamingTheRank) {
  test_support::LocalJob job;
  job.runRanks(2, optionsFor("tcp"), [&](int rank, const std::shared_ptr<Communicator>& comm) {
    std::vector<float> in(1000, 1.0f), out(1000);
    void* handle = nullptr;
    ASSERT_TRUE(comm->registerBuffer(in.data(), in.size() * sizeof(float), &handle).isOk());
    ASSERT_TRUE(comm->allReduce(in.data(), out.data(), in.size(), mscFloat32, mscSum)->wait(30s).isOk());
    EXPECT_EQ(out[999], 2.0f);
    EXPECT_EQ(comm->registrationsMade(), 0u) << "tcp registers nothing";
    ASSERT_TRUE(comm->deregisterBuffer(handle).isOk());
    Status twice = comm->deregisterBuffer(handle);
    EXPECT_EQ(twice.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(twice.message().find("rank " + std::to_string(rank) + ": deregistering"), std::string::npos)
        << twice.message();
    Status empty = comm->registerBuffer(in.data(), 0, &handle);
    EXPECT_EQ(empty.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(empty.message().find("empty range"), std::string::npos) << empty.message();
  });
}

}  // namespace
}  // namespace megascale
