// The node engine as a stage of schedules: the executor hands host steps to the HostStage, which runs them on
// its own thread in program order. Two ranks of one host as threads, each with its engine and stage.
#include "collectives/host_stage.h"

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <thread>
#include <vector>

#include "collectives/executor.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

class HostStageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::array<std::unique_ptr<node::Region>, 2> regions;
    for (int r = 0; r < 2; ++r) {
      regions[r] = node::Region::create(r, 64 << 10);
      identities_[r] = regions[r]->identity();
      links_[r] = std::make_unique<PeerLinks>(std::vector<PeerLinks::Endpoint>{}, r,
                                              [](int) -> transport::ListenerAddresses { throw Error(ErrorCode::kInternal, "no peers"); });
    }
    for (int r = 0; r < 2; ++r) {
      node::NodeOptions options;
      options.timeout = 300ms;
      auto engine = std::make_unique<node::NodeEngine>(r, 2, options, std::move(regions[r]),
                                                       [this](int q) { return identities_[q]; });
      engine->nameRanks([](int q) { return "rank " + std::to_string(10 + q) + " on host test"; });
      stages_[r] = std::make_unique<HostStage>(std::move(engine), std::vector<int>{10, 11}, r);
    }
  }

  Status execute(int rank, const Schedule& schedule, std::vector<void*> buffers, mscRedOp_t op = mscSum) {
    ExecutionContext ctx;
    ctx.rank = 10 + rank;
    ctx.operation = "host schedule";
    ctx.tag = 7;
    ctx.timeout = 300ms;
    ctx.nranks_for_average = 2;
    ctx.host = stages_[rank].get();
    return executeSchedule(schedule, std::move(buffers), mscInt32, op, *links_[rank], ctx);
  }

  std::array<node::RegionIdentity, 2> identities_;
  std::array<std::unique_ptr<PeerLinks>, 2> links_;
  std::array<std::unique_ptr<HostStage>, 2> stages_;
};

// An all-reduce of 2n elements as the hierarchical schedule builds it on one host: the engine reduce-scatters
// into this rank's part, a local step doubles it (it must wait for the reduce-scatter and the all-gather for
// it), and the engine all-gathers the parts. Two chunks, so host steps of different phases queue on the stage.
Schedule hostAllReduce(int rank, size_t n) {
  Schedule s;
  for (size_t chunk = 0; chunk < 2; ++chunk) {
    const size_t begin = chunk * 2 * n;
    const Slice part{kOutput, begin + static_cast<size_t>(rank) * n, n};
    s.phases.push_back(Phase{{Step{Step::kHostReduceScatter, -1, Slice{kInput, begin, 2 * n}, {}, part}}, {}});
    s.phases.push_back(Phase{{}, {Step{Step::kReduce, -1, part, part, part}}});
    s.phases.push_back(Phase{{Step{Step::kHostAllGather, -1, part, {}, Slice{kOutput, begin, 2 * n}}}, {}});
  }
  s.result = Slice{kOutput, 0, 4 * n};
  return s;
}

TEST_F(HostStageTest, HostStepsAndLocalStepsComposeIntoAnExactAllReduce) {
  for (size_t n : {size_t{1}, size_t{1000}, size_t{40000}}) {
    for (bool in_place : {false, true}) {
      std::array<std::vector<int32_t>, 2> in, out;
      std::array<Status, 2> status;
      std::vector<std::thread> threads;
      for (int r = 0; r < 2; ++r) {
        in[r].assign(4 * n, 0);
        for (size_t i = 0; i < 4 * n; ++i) in[r][i] = static_cast<int32_t>(i % 1000) + 7 * r;
        out[r] = in_place ? in[r] : std::vector<int32_t>(4 * n, -1);
        threads.emplace_back([&, r] {
          void* input = in_place ? static_cast<void*>(out[r].data()) : static_cast<void*>(in[r].data());
          status[r] = execute(r, hostAllReduce(r, n), {input, out[r].data()});
        });
      }
      for (auto& t : threads) t.join();
      for (int r = 0; r < 2; ++r) {
        ASSERT_TRUE(status[r].isOk()) << status[r].message();
        for (size_t i = 0; i < 4 * n; ++i) {
          ASSERT_EQ(out[r][i], 2 * (2 * static_cast<int32_t>(i % 1000) + 7)) << "rank " << r << " element " << i << " n " << n;
        }
      }
    }
  }
}

// The schedule divides an average once at the end, so the host's reduction is a sum.
TEST_F(HostStageTest, AnAverageIsDividedOnceOverTheWholeSchedule) {
  std::array<std::vector<int32_t>, 2> in{std::vector<int32_t>(8, 4), std::vector<int32_t>(8, 8)}, out;
  std::array<Status, 2> status;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    out[r].assign(8, -1);
    threads.emplace_back([&, r] { status[r] = execute(r, hostAllReduce(r, 2), {in[r].data(), out[r].data()}, mscAvg); });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(status[r].isOk()) << status[r].message();
    EXPECT_EQ(out[r], std::vector<int32_t>(8, 12)) << "rank " << r;  // (4 + 8) doubled, over 2 ranks
  }
}

// A rank of the host that never joins: the error comes within the timeout and names the rank it waited for,
// in the communicator's numbering, and its host; the stage has let go of the buffers when execute returns.
TEST_F(HostStageTest, AHostRankThatNeverJoinsFailsNamingIt) {
  std::vector<int32_t> in(8, 1), out(8, 0);
  const auto start = std::chrono::steady_clock::now();
  Status s = execute(0, hostAllReduce(0, 2), {in.data(), out.data()});
  ASSERT_FALSE(s.isOk());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(s.code(), ErrorCode::kTimeout) << s.message();
  EXPECT_NE(s.message().find("rank 10"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank 11 on host test"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("shared-memory stage among the host's ranks 10, 11"), std::string::npos) << s.message();
  // The stage stays failed: a later schedule fails at once with the same error.
  s = execute(0, hostAllReduce(0, 2), {in.data(), out.data()});
  EXPECT_FALSE(s.isOk());
}

// A one-host communicator's all-reduce: one host step and nothing else, run alone (LoneHostStep: the engine
// called on this thread) or as any schedule (the stage's thread); an average is divided once either way.
Schedule loneAllReduce(size_t n) {
  Schedule s;
  s.phases.push_back(Phase{{Step{Step::kHostAllReduce, -1, Slice{kInput, 0, n}, {}, Slice{kOutput, 0, n}}}, {}});
  s.result = Slice{kOutput, 0, n};
  return s;
}

TEST_F(HostStageTest, ALoneHostStepRunsAloneOrAsASchedule) {
  ASSERT_TRUE(isLoneHostStep(loneAllReduce(4)));
  ASSERT_FALSE(isLoneHostStep(hostAllReduce(0, 4)));
  for (bool alone : {true, false}) {
    for (mscRedOp_t op : {mscSum, mscAvg}) {
      for (size_t n : {size_t{3}, size_t{100000}}) {
        const Schedule schedule = loneAllReduce(n);
        std::array<std::vector<int32_t>, 2> in{std::vector<int32_t>(n, 4), std::vector<int32_t>(n, 8)}, out;
        std::array<Status, 2> status;
        std::vector<std::thread> threads;
        for (int r = 0; r < 2; ++r) {
          out[r].assign(n, -1);
          threads.emplace_back([&, r] {
            status[r] = alone ? LoneHostStep{schedule, in[r].data(), out[r].data(), mscInt32, op, 7, 2, *stages_[r],
                                             [] { return std::string("test all-reduce"); }}
                                    .runToEnd()
                              : execute(r, schedule, {in[r].data(), out[r].data()}, op);
          });
        }
        for (auto& t : threads) t.join();
        for (int r = 0; r < 2; ++r) {
          ASSERT_TRUE(status[r].isOk()) << status[r].message();
          EXPECT_EQ(out[r], std::vector<int32_t>(n, op == mscAvg ? 6 : 12)) << "rank " << r << " n " << n << " alone " << alone;
        }
      }
    }
  }
}

// The small-message path: begun on the caller's thread; when the host's other rank is late, the call is held
// begun and the run of the same schedule finishes it (on any thread), exactly once.
TEST_F(HostStageTest, ABegunLoneStepIsFinishedByTheRunOfItsSchedule) {
  const Schedule schedule = loneAllReduce(8);
  std::array<std::vector<int32_t>, 2> in{std::vector<int32_t>(8, 3), std::vector<int32_t>(8, 5)};
  std::array<std::vector<int32_t>, 2> out{std::vector<int32_t>(8, -1), std::vector<int32_t>(8, -1)};
  const auto lone = [&](int r) {
    return LoneHostStep{schedule, in[r].data(), out[r].data(), mscInt32, mscAvg, 7, 2, *stages_[r],
                        [] { return std::string("test all-reduce"); }};
  };
  // Finished by a ScheduleRun, then by the lone step's own runToEnd.
  for (bool schedule_run : {true, false}) {
    out = {std::vector<int32_t>(8, -1), std::vector<int32_t>(8, -1)};
    bool done = true;
    Status s = lone(0).begin(&done);
    ASSERT_TRUE(s.isOk()) << s.message();
    ASSERT_FALSE(done) << "rank 11 has not arrived, yet rank 10's all-reduce finished";
    Status late;
    std::thread other([&] { late = lone(1).runToEnd(); });
    s = schedule_run ? execute(0, schedule, {in[0].data(), out[0].data()}, mscAvg) : lone(0).runToEnd();
    other.join();
    ASSERT_TRUE(s.isOk()) << s.message();
    ASSERT_TRUE(late.isOk()) << late.message();
    for (int r = 0; r < 2; ++r) EXPECT_EQ(out[r], std::vector<int32_t>(8, 4)) << "rank " << r << " schedule_run " << schedule_run;
  }
  // Both ranks on time: begun here, finished here, divided once.
  std::array<bool, 2> finished{};
  std::array<Status, 2> status;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    out[r].assign(8, -1);
    threads.emplace_back([&, r] {
      bool here = false;
      status[r] = lone(r).begin(&here);
      if (status[r].isOk() && !here) status[r] = execute(r, schedule, {in[r].data(), out[r].data()}, mscAvg);
      finished[r] = here;
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(status[r].isOk()) << status[r].message();
    EXPECT_EQ(out[r], std::vector<int32_t>(8, 4)) << "rank " << r << (finished[r] ? " (finished on begin)" : "");
  }
}

TEST_F(HostStageTest, HostStepsWithoutAStageOrWithWrongSizesAreRefused) {
  std::vector<int32_t> in(8, 1), out(8, 0);
  ExecutionContext ctx;
  ctx.operation = "host schedule";
  Status s = executeSchedule(hostAllReduce(0, 2), {in.data(), out.data()}, mscInt32, mscSum, *links_[0], ctx);
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_NE(s.message().find("no node engine serves this rank's host"), std::string::npos) << s.message();
  Schedule wrong;  // a reduce-scatter of 3 elements over 2 ranks into 2
  wrong.phases.push_back(Phase{{Step{Step::kHostReduceScatter, -1, Slice{kInput, 0, 3}, {}, Slice{kOutput, 0, 2}}}, {}});
  s = execute(0, wrong, {in.data(), out.data()});
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_NE(s.message().find("do not fit the host's 2 ranks"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace megascale
