// The executor runs a schedule as data flow: a step waits only for the earlier steps whose bytes it overlaps
// (on the real addresses), and transfers on one comm go out in program order. Two ranks as threads, over the
// tcp transport on loopback, with hand-written schedules.
#include "collectives/executor.h"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "collectives/algorithms/registry.h"
#include "collectives/memory/fake_device.h"
#include "transport/registry.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

Step sendOf(int peer, Slice s) { return Step{Step::kSend, peer, s, {}, {}}; }
Step recvOf(int peer, Slice s) { return Step{Step::kRecv, peer, {}, {}, s}; }
Step reduceOf(Slice a, Slice b, Slice dst) { return Step{Step::kReduce, -1, a, b, dst}; }

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    transport::TransportOptions options;
    options.secret = "executor-test";
    options.bind_address = "127.0.0.1";
    options.handshake_timeout_ms = 5000;
    std::array<std::vector<PeerLinks::Endpoint>, 2> endpoints;
    for (int r = 0; r < 2; ++r) {
      PeerLinks::Endpoint e{transport::createTransport("tcp", options), nullptr};
      e.listener = e.transport->listen();
      table_[r] = transport::ListenerAddresses{"localhost", {e.listener->address()}};
      endpoints[r].push_back(std::move(e));
    }
    for (int r = 0; r < 2; ++r) {
      links_[r] = std::make_unique<PeerLinks>(std::move(endpoints[r]), r, [this](int peer) { return table_[peer]; });
    }
    // Connect both directions once, as a communicator's first operation would: a phase ahead of the oldest
    // starts early only on comms already connected.
    std::array<int, 2> ping{1, 2}, pong{0, 0};
    run({Schedule{{Phase{{sendOf(1, Slice{kInput, 0, 1}), recvOf(1, Slice{kOutput, 0, 1})}, {}}}}},
        {Schedule{{Phase{{sendOf(0, Slice{kInput, 1, 1}), recvOf(0, Slice{kOutput, 1, 1})}, {}}}}},
        {ping.data(), pong.data()}, {ping.data(), pong.data()});
  }

  // Runs the two ranks' schedules at once on int32 sum; returns their statuses.
  std::array<Status, 2> run(const Schedule& s0, const Schedule& s1, std::vector<void*> buffers0, std::vector<void*> buffers1,
                            std::chrono::milliseconds timeout = 20s, mscDataType_t type = mscInt32, mscRedOp_t op = mscSum,
                            const memory::StagingPlan& staging = {}) {
    std::array<Status, 2> status;
    std::array<const Schedule*, 2> schedules{&s0, &s1};
    std::array<std::vector<void*>, 2> buffers{buffers0, buffers1};
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        ExecutionContext ctx;
        ctx.rank = r;
        ctx.operation = "test schedule";
        ctx.timeout = timeout;
        ctx.nranks_for_average = 2;
        ctx.staging = staging;
        status[r] = executeSchedule(*schedules[r], buffers[r], type, op, *links_[r], ctx);
      });
    }
    for (auto& t : threads) t.join();
    return status;
  }

  std::array<transport::ListenerAddresses, 2> table_;
  std::array<std::unique_ptr<PeerLinks>, 2> links_;
};

// Under lockstep phases this pair deadlocks: each rank's phase 0 waits for what the other sends in phase 1.
// The sends touch no byte of the pending receives, so they go out at once.
TEST_F(ExecutorTest, ALaterPhasesIndependentTransferDoesNotWaitForEarlierPhases) {
  std::vector<int32_t> in0(1000, 5), out0(1000, 0), in1(1000, 9), out1(1000, 0);
  Schedule s0{{Phase{{recvOf(1, Slice{kOutput, 0, 1000})}, {}}, Phase{{sendOf(1, Slice{kInput, 0, 1000})}, {}}}};
  Schedule s1{{Phase{{recvOf(0, Slice{kOutput, 0, 1000})}, {}}, Phase{{sendOf(0, Slice{kInput, 0, 1000})}, {}}}};
  auto status = run(s0, s1, {in0.data(), out0.data()}, {in1.data(), out1.data()}, 3s);
  ASSERT_TRUE(status[0].isOk()) << status[0].message();
  ASSERT_TRUE(status[1].isOk()) << status[1].message();
  EXPECT_EQ(out0, in1);
  EXPECT_EQ(out1, in0);
}

// Rank 0 receives x, adds its own y in place and sends the sum back: the reduction waits for the receive and
// the send for the reduction, although each is posted as soon as the loop reaches it.
TEST_F(ExecutorTest, ASendWaitsForTheReductionThatWritesItsBytes) {
  const size_t n = 300000;  // beyond the socket buffers: a send posted too early would carry stale bytes
  std::vector<int32_t> x(n), y(n), back(n, -1);
  std::iota(x.begin(), x.end(), 0);
  std::iota(y.begin(), y.end(), 1000);
  std::vector<int32_t> work(n, -7);  // rank 0's buffer: receives x, then holds x + y
  Schedule s0{{Phase{{recvOf(1, Slice{kOutput, 0, n})}, {}},
               Phase{{}, {reduceOf(Slice{kOutput, 0, n}, Slice{kInput, 0, n}, Slice{kOutput, 0, n})}},
               Phase{{sendOf(1, Slice{kOutput, 0, n})}, {}}}};
  Schedule s1{{Phase{{sendOf(0, Slice{kInput, 0, n})}, {}}, Phase{{recvOf(0, Slice{kOutput, 0, n})}, {}}}};
  auto status = run(s0, s1, {y.data(), work.data()}, {x.data(), back.data()});
  ASSERT_TRUE(status[0].isOk()) << status[0].message();
  ASSERT_TRUE(status[1].isOk()) << status[1].message();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(back[i], x[i] + y[i]) << "element " << i;
}

// In place, input and output are one buffer: a send of the "input" after a receive into the "output" reads
// the received bytes, so it must wait for the receive although the slices name different buffers.
TEST_F(ExecutorTest, AliasedBuffersAreOrderedByTheirAddresses) {
  const size_t n = 200000;
  std::vector<int32_t> from1(n), one_buffer(n, -3), echoed(n, -1);
  std::iota(from1.begin(), from1.end(), 17);
  Schedule s0{{Phase{{recvOf(1, Slice{kOutput, 0, n})}, {}}, Phase{{sendOf(1, Slice{kInput, 0, n})}, {}}}};
  Schedule s1{{Phase{{sendOf(0, Slice{kInput, 0, n})}, {}}, Phase{{recvOf(0, Slice{kOutput, 0, n})}, {}}}};
  auto status = run(s0, s1, {one_buffer.data(), one_buffer.data()}, {from1.data(), echoed.data()});
  ASSERT_TRUE(status[0].isOk()) << status[0].message();
  ASSERT_TRUE(status[1].isOk()) << status[1].message();
  EXPECT_EQ(echoed, from1);
}

// A receive into bytes an earlier send still reads waits for that send (write after read), and transfers to
// one peer are matched in program order across phases.
TEST_F(ExecutorTest, AReceiveWaitsForTheSendReadingItsBytesAndOrderHoldsAcrossPhases) {
  const size_t n = 500000;
  std::vector<int32_t> a(n), b(n), got(2 * n, -1), buffer0(n), unused(1);
  std::iota(a.begin(), a.end(), 1);
  std::iota(b.begin(), b.end(), 2 * static_cast<int32_t>(n));
  buffer0 = a;
  // Rank 0 sends its buffer, then receives b into the same buffer and sends it on: rank 1 must get a then b.
  Schedule s0{{Phase{{sendOf(1, Slice{kInput, 0, n})}, {}}, Phase{{recvOf(1, Slice{kInput, 0, n})}, {}},
               Phase{{sendOf(1, Slice{kInput, 0, n})}, {}}}};
  Schedule s1{{Phase{{recvOf(0, Slice{kOutput, 0, n}), sendOf(0, Slice{kInput, 0, n})}, {}},
               Phase{{recvOf(0, Slice{kOutput, n, n})}, {}}}};
  auto status = run(s0, s1, {buffer0.data(), unused.data()}, {b.data(), got.data()});
  ASSERT_TRUE(status[0].isOk()) << status[0].message();
  ASSERT_TRUE(status[1].isOk()) << status[1].message();
  EXPECT_TRUE(std::equal(a.begin(), a.end(), got.begin()));
  EXPECT_TRUE(std::equal(b.begin(), b.end(), got.begin() + static_cast<long>(n)));
}

// A peer that never sends: the error names the rank, the phase and the peer within the timeout.
TEST_F(ExecutorTest, AMissingMessageTimesOutNamingThePhaseAndPeer) {
  std::vector<int32_t> buf(10, 0);
  ExecutionContext ctx;
  ctx.rank = 0;
  ctx.operation = "test schedule";
  ctx.timeout = 300ms;
  Schedule s0{{Phase{{recvOf(1, Slice{kOutput, 0, 10})}, {}}}};
  Status s = executeSchedule(s0, {buf.data(), buf.data()}, mscInt32, mscSum, *links_[0], ctx);
  ASSERT_FALSE(s.isOk());
  EXPECT_EQ(s.code(), ErrorCode::kTimeout);
  EXPECT_NE(s.message().find("rank 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("phase 0"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("receive from rank 1"), std::string::npos) << s.message();
}

// Device buffers (the fake device: the host cannot touch them): every all-reduce schedule, staged through host
// memory in small pieces, gives bit for bit the host buffers' result, its copies and reductions run by the device's
// engine.
TEST_F(ExecutorTest, SchedulesOnDeviceBuffersGiveTheHostResultBitForBit) {
  memory::FakeDeviceSpace& device = memory::fakeDevice();
  const size_t n = 5001;
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kRecursiveHalvingDoubling, Algorithm::kDirect,
                              Algorithm::kDoubleBinaryTree, Algorithm::kPipelinedRing}) {
    for (mscRedOp_t op : {mscSum, mscAvg, mscMax}) {
      std::array<Schedule, 2> schedules;
      std::array<std::vector<float>, 2> in, host_out;
      for (int r = 0; r < 2; ++r) {
        schedules[r] = buildSchedule(ScheduleSpec{Collective::kAllReduce, algorithm, n, r, 2, 0, false});
        in[r].resize(n);
        for (size_t i = 0; i < n; ++i) in[r][i] = 0.1f * static_cast<float>((i * 7 + static_cast<size_t>(r) * 3) % 101) - 3.3f;
        host_out[r].assign(n, 0.0f);
      }
      auto status = run(schedules[0], schedules[1], {in[0].data(), host_out[0].data()}, {in[1].data(), host_out[1].data()},
                        20s, mscFloat32, op);
      ASSERT_TRUE(status[0].isOk() && status[1].isOk()) << status[0].message() << status[1].message();
      std::array<void*, 2> device_in{}, device_out{};
      for (int r = 0; r < 2; ++r) {
        device_in[r] = device.allocate(n * sizeof(float));
        device_out[r] = device.allocate(n * sizeof(float));
        ASSERT_TRUE(memory::copyBlocking(device_in[r], in[r].data(), n * sizeof(float)).isOk());
      }
      const uint64_t items_before = device.itemsRun();
      status = run(schedules[0], schedules[1], {device_in[0], device_out[0]}, {device_in[1], device_out[1]}, 20s, mscFloat32, op,
                   memory::StagingPlan{1024, 2});
      ASSERT_TRUE(status[0].isOk() && status[1].isOk()) << status[0].message() << status[1].message();
      EXPECT_GT(device.itemsRun() - items_before, 2 * n * sizeof(float) / 1024) << "each piece is copied by the engine";
      for (int r = 0; r < 2; ++r) {
        std::vector<float> got(n);
        ASSERT_TRUE(memory::copyBlocking(got.data(), device_out[r], n * sizeof(float)).isOk());
        EXPECT_EQ(std::memcmp(got.data(), host_out[r].data(), n * sizeof(float)), 0)
            << algorithmName(algorithm) << " " << static_cast<int>(op) << " rank " << r;
        device.release(device_in[r]);
        device.release(device_out[r]);
      }
    }
  }
}

// An operation's buffers lie in one space: a host input with a device output is refused, naming both.
TEST_F(ExecutorTest, HostAndDeviceBuffersInOneOperationAreRefusedNamingBoth) {
  memory::FakeDeviceSpace& device = memory::fakeDevice();
  std::vector<int32_t> in(10, 1);
  void* out = device.allocate(10 * sizeof(int32_t));
  ExecutionContext ctx;
  ctx.rank = 0;
  ctx.operation = "test schedule";
  Schedule s{{Phase{{}, {Step{Step::kCopy, -1, Slice{kInput, 0, 10}, {}, Slice{kOutput, 0, 10}}}}}};
  Status status = executeSchedule(s, {in.data(), out}, mscInt32, mscSum, *links_[0], ctx);
  device.release(out);
  ASSERT_EQ(status.code(), ErrorCode::kInvalidArgument) << status.message();
  EXPECT_NE(status.message().find("output is fake-device memory and the input host memory"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("rank 0"), std::string::npos) << status.message();
}

// A device that stops (a hung kernel): the operation fails on its timeout naming the engine, the caller is not held
// up past it, and once the device runs again the same queue serves the next operation.
TEST_F(ExecutorTest, AHungDeviceFailsTheOperationOnItsTimeoutAndTheQueueServesTheNextOne) {
  memory::FakeDeviceSpace& device = memory::fakeDevice();
  const size_t n = 1000;
  std::vector<int32_t> host(n, 7), back(n, 0);
  void* in = device.allocate(n * sizeof(int32_t));
  void* out = device.allocate(n * sizeof(int32_t));
  ASSERT_TRUE(memory::copyBlocking(in, host.data(), n * sizeof(int32_t)).isOk());
  memory::QueueCache queues;  // a communicator's: both operations use one queue
  ExecutionContext ctx;
  ctx.rank = 0;
  ctx.operation = "test schedule";
  ctx.timeout = 300ms;
  ctx.queues = &queues;
  const Schedule copy{{Phase{{}, {Step{Step::kCopy, -1, Slice{kInput, 0, n}, {}, Slice{kOutput, 0, n}}}}}};
  device.setStalled(true);
  const auto t0 = std::chrono::steady_clock::now();
  Status s = executeSchedule(copy, {in, out}, mscInt32, mscSum, *links_[0], ctx);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  device.setStalled(false);
  ASSERT_EQ(s.code(), ErrorCode::kTimeout) << s.message();
  EXPECT_NE(s.message().find("waiting for the fake-device engine"), std::string::npos) << s.message();
  EXPECT_LT(seconds, 0.3 + 1.0 + 2.0) << "the timeout, the bounded release wait, and slack";
  s = executeSchedule(copy, {in, out}, mscInt32, mscSum, *links_[0], ctx);
  ASSERT_TRUE(s.isOk()) << s.message();
  ASSERT_TRUE(memory::copyBlocking(back.data(), out, n * sizeof(int32_t)).isOk());
  EXPECT_EQ(back, host);
  device.release(in);
  device.release(out);
}

// An abort while device work is queued ends the operation at once with the named error.
TEST_F(ExecutorTest, AnAbortWithDeviceWorkInFlightEndsTheOperation) {
  memory::FakeDeviceSpace& device = memory::fakeDevice();
  void* buf = device.allocate(4096);
  std::atomic<bool> aborted{false};
  ExecutionContext ctx;
  ctx.rank = 0;
  ctx.operation = "test schedule";
  ctx.timeout = 60s;
  ctx.aborted = &aborted;
  const Schedule copy{{Phase{{}, {Step{Step::kCopy, -1, Slice{kInput, 0, 512}, {}, Slice{kOutput, 512, 512}}}}}};
  device.setStalled(true);
  std::thread aborter([&] {
    std::this_thread::sleep_for(100ms);
    aborted = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  const Status s = executeSchedule(copy, {buf, buf}, mscInt32, mscSum, *links_[0], ctx);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  aborter.join();
  device.setStalled(false);
  EXPECT_EQ(s.code(), ErrorCode::kAborted) << s.message();
  EXPECT_LT(seconds, 5.0);
  device.release(buf);
}

}  // namespace
}  // namespace megascale
