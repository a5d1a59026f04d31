// A job's start: groups of a known layout made with no exchange, no barrier anywhere in init, and the ways a
// start goes wrong (the store restarts, a rank never comes) as clear errors naming the rank and the operation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store_fixture.h"
#include "collectives/communicator.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

CommunicatorOptions tcpOptions(std::chrono::milliseconds timeout = 20s) {
  CommunicatorOptions o;
  o.timeout = timeout;
  o.transport = "tcp";
  o.transport_options.handshake_timeout_ms = static_cast<int>(timeout.count());
  return o;
}

int32_t sumOver(Communicator& comm, int32_t value) {
  int32_t sum = 0;
  Status s = comm.allReduce(&value, &sum, 1, mscInt32, mscSum)->wait(20s);
  EXPECT_TRUE(s.isOk()) << s.message();
  return sum;
}

// 8 ranks as 2 x 2 x 2 (rank = t + 2 * (d + 2 * p)): each rank's three groups from the layout alone.
TEST(CommunicatorInit, StridedGroupsWorkAndARankAheadDoesNotWaitForTheOthers) {
  testing::TcpBackend job;
  std::atomic<bool> first_done{false};
  std::atomic<int> started_before_first_done{0};
  auto rank_body = [&](int rank) {
    if (rank != 0) {
      while (!first_done.load()) std::this_thread::sleep_for(1ms);  // rank 0 finishes its init alone
    }
    if (!first_done.load()) ++started_before_first_done;
    auto world = Communicator::create(job.id(), rank, 8, tcpOptions());
    const int t = rank % 2, d = rank / 2 % 2, p = rank / 4;
    auto tp = world->splitStrided({2 * (d + 2 * p), 1, 2});
    auto dp = world->splitStrided({t + 4 * p, 2, 2});
    auto pp = world->splitStrided({t + 2 * d, 4, 2});
    auto none = world->splitStrided({0, 1, 0});  // this rank joins no group
    EXPECT_EQ(none, nullptr);
    ASSERT_NE(tp, nullptr);
    EXPECT_EQ(tp->rank(), t);
    EXPECT_EQ(dp->rank(), d);
    EXPECT_EQ(pp->rank(), p);
    EXPECT_EQ(pp->size(), 2);
    if (rank == 0) first_done = true;  // made its world and groups with no other rank there
    // Group traffic: each sum names exactly the group's members.
    EXPECT_EQ(sumOver(*tp, rank), 2 * (2 * (d + 2 * p)) + 1);
    EXPECT_EQ(sumOver(*dp, rank), 2 * (t + 4 * p) + 2);
    EXPECT_EQ(sumOver(*pp, rank), 2 * (t + 2 * d) + 4);
    EXPECT_EQ(sumOver(*world, 1), 8);
    // Connections of the groups share the world's one listener.
    EXPECT_EQ(tp->transportName(), world->transportName());
  };
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) ranks.emplace_back(rank_body, r);
  for (auto& r : ranks) r.join();
  EXPECT_EQ(started_before_first_done.load(), 1);
}

TEST(CommunicatorInit, OneRankOfAThousandInitsAloneWithoutWaiting) {
  testing::TcpBackend job;
  const auto start = std::chrono::steady_clock::now();
  auto world = Communicator::create(job.id(), 517, 1024, tcpOptions());
  auto tp = world->splitStrided({512, 1, 8});   // ranks 512..519
  auto dp = world->splitStrided({5, 8, 128});   // every eighth rank from 5
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->rank(), 5);
  EXPECT_EQ(dp->rank(), 64);
  EXPECT_EQ(dp->size(), 128);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // no rank but this one exists
}

TEST(CommunicatorInit, StridedSplitRejectsGroupsOutsideTheCommunicatorNamingTheRank) {
  testing::TcpBackend job;
  auto world = Communicator::create(job.id(), 3, 8, tcpOptions());
  auto expectInvalid = [&](Communicator::RankStride g, const char* fragment) {
    try {
      (void)world->splitStrided(g);
      ADD_FAILURE() << "accepted a bad group (" << fragment << ")";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expectInvalid({2, 4, 3}, "do not lie in");      // 2, 6, 10
  expectInvalid({0, 2, 4}, "does not include it");  // 0, 2, 4, 6
  expectInvalid({3, 0, 2}, "do not lie in");      // the same rank twice
  expectInvalid({0, 1, -1}, "a group of -1");
}

TEST(CommunicatorInit, StoreRestartDuringInitIsAClearErrorNotAHang) {
  testing::TcpBackend job;
  std::vector<std::shared_ptr<Communicator>> worlds(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) ranks.emplace_back([&, r] { worlds[r] = Communicator::create(job.id(), r, 2, tcpOptions(5s)); });
  for (auto& t : ranks) t.join();
  job.restart();  // same port, empty: both published into the store that is now gone
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::string> errors(2);
  ranks.clear();
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      int64_t out = r, in = -1;
      Status s = worlds[r]->pointToPoint({{true, &out, 1, mscInt64, 1 - r}, {false, &in, 1, mscInt64, 1 - r}})->wait(30s);
      errors[r] = s.message();
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("restarted"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("rank " + std::to_string(r)), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("send"), std::string::npos) << errors[r];  // the operation
  }
}

TEST(CommunicatorInit, ARankThatNeverArrivesTimesOutNamingIt) {
  testing::TcpBackend job;
  std::vector<std::string> errors(2);
  std::vector<std::thread> ranks;
  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto world = Communicator::create(job.id(), r, 3, tcpOptions(1s));  // rank 2 never starts
      int64_t out = r;
      errors[r] = world->pointToPoint({{true, &out, 1, mscInt64, 2}})->wait(30s).message();
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 15s);
  for (int r = 0; r < 2; ++r) {
    EXPECT_NE(errors[r].find("rank 2 did not publish"), std::string::npos) << errors[r];
    EXPECT_NE(errors[r].find("rank " + std::to_string(r)), std::string::npos) << errors[r];
  }
}

}  // namespace
}  // namespace megascale
