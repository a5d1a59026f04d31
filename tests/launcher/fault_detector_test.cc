// The driver's decisions from samples alone: which faults it sees, whom it names, and what it lets pass.
#include "launcher/fault_detector.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <csignal>

namespace megascale::launcher {
namespace {

using std::chrono::milliseconds;

constexpr int kExitStatus3 = 3 << 8;  // a wait status: exited with status 3
constexpr int kKilled = SIGKILL;      // a wait status: killed by SIGKILL

// Ranks 0..n-1, all running, all past their first heartbeat, none in a collective.
std::vector<RankSample> healthy(int n) {
  std::vector<RankSample> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    ranks[static_cast<size_t>(r)].rank = r;
    ranks[static_cast<size_t>(r)].reported = true;
  }
  return ranks;
}

struct DetectorTest : ::testing::Test {
  Clock::time_point t0 = Clock::now();
  Clock::time_point at(int ms) const { return t0 + milliseconds(ms); }
  FaultDetector detector{milliseconds(2000), milliseconds(100)};
};

TEST_F(DetectorTest, HealthyRanksMakingProgressAreNoFault) {
  auto ranks = healthy(4);
  for (int i = 0; i < 50; ++i) {
    for (auto& r : ranks) ++r.progress;
    EXPECT_FALSE(detector.observe(at(i * 100), ranks));
  }
}

TEST_F(DetectorTest, RanksThatExitZeroAreNoFault) {
  auto ranks = healthy(2);
  ranks[1].running = false;
  ranks[1].wait_status = 0;
  EXPECT_FALSE(detector.observe(at(0), ranks));
}

TEST_F(DetectorTest, AFailedRankIsAFaultOnePeriodLaterWithItsStatus) {
  auto ranks = healthy(4);
  EXPECT_FALSE(detector.observe(at(0), ranks));
  ranks[2].running = false;
  ranks[2].wait_status = kExitStatus3;
  EXPECT_FALSE(detector.observe(at(10), ranks));  // waits for a death that would explain it
  EXPECT_FALSE(detector.observe(at(109), ranks));
  auto fault = detector.observe(at(110), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->kind, Fault::Kind::kExited);
  EXPECT_EQ(fault->ranks, std::vector<int>{2});
  EXPECT_EQ(fault->exit_code, 3);
  EXPECT_EQ(fault->reason, "exited with status 3");
}

TEST_F(DetectorTest, FailedRanksAreAFaultAtOnceWhenNoRankRunsAnyMore) {
  auto ranks = healthy(2);
  EXPECT_FALSE(detector.observe(at(0), ranks));
  for (auto& r : ranks) {
    r.running = false;
    r.wait_status = kExitStatus3;
  }
  auto fault = detector.observe(at(10), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, std::vector<int>{0});
  EXPECT_EQ(fault->exit_code, 3);
}

TEST_F(DetectorTest, AKilledRankIsAFaultAtOnce) {
  auto ranks = healthy(4);
  EXPECT_FALSE(detector.observe(at(0), ranks));
  ranks[3].running = false;
  ranks[3].wait_status = kKilled;
  auto fault = detector.observe(at(10), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, std::vector<int>{3});
  EXPECT_EQ(fault->exit_code, 128 + SIGKILL);
}

TEST_F(DetectorTest, APeerThatExitedFirstWaitsForTheRankWhoseDeathMadeItFail) {
  // The peer's error exit is reaped a moment before the killed rank.
  auto ranks = healthy(4);
  EXPECT_FALSE(detector.observe(at(0), ranks));
  ranks[0].running = false;
  ranks[0].wait_status = kExitStatus3;
  EXPECT_FALSE(detector.observe(at(10), ranks));
  ranks[1].running = false;
  ranks[1].wait_status = kKilled;
  auto fault = detector.observe(at(60), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, std::vector<int>{1});
}

TEST_F(DetectorTest, AmongSeveralEndedRanksTheKilledOneIsNamed) {
  // Its peers failed because it died: they exited with an error in the same sample.
  auto ranks = healthy(3);
  ranks[0].running = ranks[1].running = ranks[2].running = false;
  ranks[0].wait_status = kExitStatus3;
  ranks[1].wait_status = kKilled;
  ranks[2].wait_status = kExitStatus3;
  auto fault = detector.observe(at(0), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, std::vector<int>{1});
  EXPECT_EQ(fault->exit_code, 128 + SIGKILL);
  EXPECT_NE(fault->reason.find("signal 9"), std::string::npos) << fault->reason;
}

TEST_F(DetectorTest, NewTransportErrorsAreAFaultNamingTheRanksThatSawThemOnePeriodLater) {
  auto ranks = healthy(4);
  ranks[3].transport_errors = 2;  // before the first sample: still new to the detector
  EXPECT_FALSE(detector.observe(at(0), ranks));
  ranks[1].transport_errors = 1;
  auto fault = detector.observe(at(100), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->kind, Fault::Kind::kTransportErrors);
  EXPECT_EQ(fault->ranks, (std::vector<int>{1, 3}));
  EXPECT_FALSE(detector.observe(at(200), ranks));  // the same counts again are no new fault
  EXPECT_FALSE(detector.observe(at(400), ranks));
  ranks[0].transport_errors = 1;
  EXPECT_FALSE(detector.observe(at(500), ranks));
  fault = detector.observe(at(600), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, std::vector<int>{0});
}

TEST_F(DetectorTest, ARankThatDiedIsNamedOverThePeersWhoseTransportSawItGo) {
  // The dead rank's sockets close before it can be reaped: its peers' errors come first.
  auto ranks = healthy(4);
  EXPECT_FALSE(detector.observe(at(0), ranks));
  ranks[0].transport_errors = ranks[2].transport_errors = 1;
  EXPECT_FALSE(detector.observe(at(20), ranks));
  ranks[1].running = false;
  ranks[1].wait_status = kKilled;
  auto fault = detector.observe(at(40), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->kind, Fault::Kind::kExited);
  EXPECT_EQ(fault->ranks, std::vector<int>{1});
}

TEST_F(DetectorTest, AStoppedRankIsNamedOnceItStalledForTheHangTimeout) {
  auto ranks = healthy(4);
  EXPECT_FALSE(detector.observe(at(0), ranks));
  ranks[1].stopped = true;
  for (int t = 100; t < 2000; t += 100) {
    for (auto& r : ranks) {
      if (!r.stopped) ++r.progress;
    }
    EXPECT_FALSE(detector.observe(at(t), ranks)) << "at " << t << " ms";
  }
  auto fault = detector.observe(at(2000), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->kind, Fault::Kind::kHang);
  EXPECT_EQ(fault->ranks, std::vector<int>{1});
  EXPECT_NE(fault->reason.find("is stopped"), std::string::npos) << fault->reason;
}

TEST_F(DetectorTest, AStoppedRankIsNamedAfterTheStoppedTimeoutWithoutWaitingForTheHangTimeout) {
  FaultDetector quick(milliseconds(5000), milliseconds(100), milliseconds(1000));
  auto ranks = healthy(4);
  EXPECT_FALSE(quick.observe(at(0), ranks));
  ranks[2].stopped = true;
  for (int t = 100; t <= 1000; t += 100) {
    for (int r : {0, 1, 3}) ranks[static_cast<size_t>(r)].in_collective = true;
    EXPECT_FALSE(quick.observe(at(t), ranks)) << "at " << t << " ms";
  }
  auto fault = quick.observe(at(1100), ranks);  // stopped since the sample at 100 ms
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->kind, Fault::Kind::kHang);
  EXPECT_EQ(fault->ranks, std::vector<int>{2});
  EXPECT_NE(fault->reason.find("stopped by a signal"), std::string::npos) << fault->reason;
  EXPECT_NE(fault->reason.find("stopped timeout 1.00 s"), std::string::npos) << fault->reason;
}

TEST_F(DetectorTest, AStallOfEveryCollectiveLongerThanTheStoppedTimeoutIsRiddenOut) {
  // A link flap: every rank waits in its collective for 3 s, none is stopped; then they all move again.
  FaultDetector quick(milliseconds(5000), milliseconds(100), milliseconds(1000));
  auto ranks = healthy(4);
  for (auto& r : ranks) r.in_collective = true;
  EXPECT_FALSE(quick.observe(at(0), ranks));
  for (int t = 100; t <= 3000; t += 100) EXPECT_FALSE(quick.observe(at(t), ranks)) << "at " << t << " ms";
  for (int t = 3100; t <= 9000; t += 100) {
    for (auto& r : ranks) ++r.progress;
    EXPECT_FALSE(quick.observe(at(t), ranks)) << "at " << t << " ms";
  }
}

TEST_F(DetectorTest, ARankContinuedBeforeTheStoppedTimeoutIsNoFault) {
  FaultDetector quick(milliseconds(5000), milliseconds(100), milliseconds(1000));
  auto ranks = healthy(2);
  EXPECT_FALSE(quick.observe(at(0), ranks));
  ranks[1].stopped = true;
  EXPECT_FALSE(quick.observe(at(100), ranks));
  EXPECT_FALSE(quick.observe(at(900), ranks));
  ranks[1].stopped = false;
  for (int t = 1000; t <= 3000; t += 100) {
    for (auto& r : ranks) ++r.progress;
    EXPECT_FALSE(quick.observe(at(t), ranks)) << "at " << t << " ms";
  }
  ranks[1].stopped = true;  // stopped again: the stopped time starts over
  EXPECT_FALSE(quick.observe(at(3100), ranks));
  EXPECT_FALSE(quick.observe(at(4000), ranks));
  EXPECT_TRUE(quick.observe(at(4100), ranks));
}

TEST_F(DetectorTest, ARankComputingForeverWhileOthersWaitInACollectiveIsNamed) {
  auto ranks = healthy(4);
  EXPECT_FALSE(detector.observe(at(0), ranks));
  for (int r : {0, 1, 3}) ranks[static_cast<size_t>(r)].in_collective = true;
  EXPECT_FALSE(detector.observe(at(1999), ranks));
  auto fault = detector.observe(at(2000), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, std::vector<int>{2});
  EXPECT_NE(fault->reason.find("outside any collective while others wait"), std::string::npos) << fault->reason;
}

TEST_F(DetectorTest, EveryRankComputingLongIsNoHangUntilAllStallForTheTimeout) {
  // A long step with nobody waiting: only the hang timeout itself decides.
  auto ranks = healthy(2);
  EXPECT_FALSE(detector.observe(at(0), ranks));
  EXPECT_FALSE(detector.observe(at(1900), ranks));
  auto fault = detector.observe(at(2000), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, (std::vector<int>{0, 1}));
  EXPECT_NE(fault->reason.find("every other rank stalled together"), std::string::npos) << fault->reason;
}

TEST_F(DetectorTest, WhenEveryoneWaitsTheRankThatStalledFirstIsNamed) {
  // Rank 2 stopped moving inside a collective; the others followed it into theirs 500 ms later.
  auto ranks = healthy(4);
  for (auto& r : ranks) r.in_collective = true;
  EXPECT_FALSE(detector.observe(at(0), ranks));
  for (int t = 100; t <= 500; t += 100) {
    for (int r : {0, 1, 3}) ++ranks[static_cast<size_t>(r)].progress;
    EXPECT_FALSE(detector.observe(at(t), ranks));
  }
  EXPECT_FALSE(detector.observe(at(2400), ranks));  // rank 2 stalled, but the others not yet for 2 s
  auto fault = detector.observe(at(2500), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, std::vector<int>{2});
  EXPECT_NE(fault->reason.find("stalled first"), std::string::npos) << fault->reason;
}

TEST_F(DetectorTest, RanksBeforeTheirFirstHeartbeatAreNotWatchedForHangs) {
  // Start-up: rank 0 loads the data for its host while rank 1 waits for it in a broadcast.
  auto ranks = healthy(2);
  ranks[0].reported = ranks[1].reported = false;
  ranks[1].in_collective = true;
  for (int t = 0; t <= 5000; t += 100) EXPECT_FALSE(detector.observe(at(t), ranks)) << "at " << t << " ms";
}

TEST_F(DetectorTest, ARankStoppedBeforeItsFirstHeartbeatIsStillAHang) {
  auto ranks = healthy(2);
  ranks[0].reported = ranks[1].reported = false;
  ranks[1].stopped = true;
  EXPECT_FALSE(detector.observe(at(0), ranks));
  auto fault = detector.observe(at(2000), ranks);
  ASSERT_TRUE(fault);
  EXPECT_EQ(fault->ranks, std::vector<int>{1});
}

TEST_F(DetectorTest, WithoutAHangTimeoutStalledRanksAreNoFault) {
  FaultDetector no_hangs(milliseconds(0), milliseconds(100));
  auto ranks = healthy(2);
  ranks[0].stopped = true;
  ranks[1].in_collective = true;
  EXPECT_FALSE(no_hangs.observe(at(0), ranks));
  EXPECT_FALSE(no_hangs.observe(at(600000), ranks));
}

}  // namespace
}  // namespace megascale::launcher
