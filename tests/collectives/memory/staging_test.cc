// Staging as a rewrite of the schedule (collectives/memory/staging.h): every collective's staged schedules, run by
// the in-memory simulator (which fails on deadlocks, size mismatches and races inside a phase), leave exactly the
// outputs of the schedules as built, with staging memory bounded per peer whatever the message size.
#include "collectives/memory/staging.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "collectives/algorithms/registry.h"
#include "collectives/schedule.h"
#include "collectives/schedule_simulator.h"

namespace megascale {
namespace {

using testing::RankBuffers;

struct Collected {
  std::vector<std::vector<uint8_t>> outputs;
  std::string error;
};

// Every rank's output after the schedules of `spec` (staged when `plan` is given) on int64 inputs.
Collected runAll(const ScheduleSpec& spec, mscRedOp_t op, const memory::StagingPlan* plan) {
  std::vector<RankBuffers> buffers(static_cast<size_t>(spec.nranks));
  const size_t in = inputCount(spec), out = outputCount(spec);
  for (int r = 0; r < spec.nranks; ++r) {
    std::vector<int64_t> input(in), output(std::max(in, out), -7);
    for (size_t i = 0; i < in; ++i) input[i] = static_cast<int64_t>((i * 5 + static_cast<size_t>(r) * 11) % 13) + 1;
    if (spec.in_place) std::copy(input.begin(), input.end(), output.begin() + (spec.collective == Collective::kAllGather ? spec.count * r : 0));
    const auto bytes = [](const std::vector<int64_t>& v) {
      const auto* p = reinterpret_cast<const uint8_t*>(v.data());
      return std::vector<uint8_t>(p, p + v.size() * sizeof(int64_t));
    };
    buffers[static_cast<size_t>(r)] = RankBuffers{bytes(input), bytes(output)};
  }
  testing::ScheduleRewrite rewrite;
  if (plan != nullptr) {
    rewrite = [plan](const Schedule& s, size_t* extra) {
      memory::StagedSchedule staged = memory::stageTransfers(s, sizeof(int64_t), *plan, kUser);
      *extra = staged.staging_count;
      return staged.schedule;
    };
  }
  Collected c;
  testing::SimulationResult sim = testing::simulate(spec, mscInt64, op, buffers, rewrite);
  c.error = sim.error;
  for (RankBuffers& b : buffers) c.outputs.push_back(std::move(b.output));
  return c;
}

struct CollectiveCase {
  Collective collective;
  Algorithm algorithm;
};

TEST(StagingTest, StagedSchedulesGiveTheSameOutputsForEveryCollective) {
  const memory::StagingPlan plan{64 * sizeof(int64_t), 2};  // small pieces: many chunks per transfer
  const CollectiveCase cases[] = {
      {Collective::kAllReduce, Algorithm::kRing},          {Collective::kAllReduce, Algorithm::kRecursiveHalvingDoubling},
      {Collective::kAllReduce, Algorithm::kDirect},        {Collective::kAllReduce, Algorithm::kDoubleBinaryTree},
      {Collective::kAllReduce, Algorithm::kPipelinedRing}, {Collective::kAllGather, Algorithm::kRing},
      {Collective::kReduceScatter, Algorithm::kRing},      {Collective::kBroadcast, Algorithm::kBinomialTree},
      {Collective::kReduce, Algorithm::kBinomialTree},     {Collective::kAllToAll, Algorithm::kPairwise},
      {Collective::kAllToAll, Algorithm::kBruck},          {Collective::kBarrier, Algorithm::kDissemination},
  };
  for (const CollectiveCase& c : cases) {
    for (int n : {2, 3, 5}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{200}, size_t{1001}}) {
        for (bool in_place : {false, true}) {
          if (c.collective == Collective::kBarrier && (count > 0 || in_place)) continue;
          ScheduleSpec spec{c.collective, c.algorithm, count, 0, n, static_cast<int>(count % static_cast<size_t>(n)), in_place};
          const std::string what = std::string(collectiveName(c.collective)) + " n=" + std::to_string(n) +
                                   " count=" + std::to_string(count) + (in_place ? " in place" : "");
          const Collected plain = runAll(spec, mscSum, nullptr);
          ASSERT_EQ(plain.error, "") << what;
          const Collected staged = runAll(spec, mscSum, &plan);
          ASSERT_EQ(staged.error, "") << what;
          for (int r = 0; r < n; ++r) {
            EXPECT_EQ(plain.outputs[static_cast<size_t>(r)], staged.outputs[static_cast<size_t>(r)]) << what << " rank " << r;
          }
        }
      }
    }
  }
}

// Staging memory is slots x chunk per peer and direction, not the message: a 1 MiB ring all-reduce of two ranks
// stages through 2 x 2 slots of 4 KiB.
TEST(StagingTest, StagingIsBoundedPerPeerAndDirection) {
  const memory::StagingPlan plan{4096, 2};
  ScheduleSpec spec{Collective::kAllReduce, Algorithm::kRing, (size_t{1} << 20) / sizeof(float), 0, 2, 0, false};
  const Schedule s = buildSchedule(spec);
  const memory::StagedSchedule staged = memory::stageTransfers(s, sizeof(float), plan, kUser);
  EXPECT_EQ(staged.peers, 2u);  // send to the next rank, receive from the previous one (the same rank here)
  EXPECT_EQ(staged.staging_count * sizeof(float), 2u * 2u * 4096u);
  size_t transfers = 0;
  for (const Phase& p : staged.schedule.phases) {
    for (const Step& step : p.comm) {
      ASSERT_TRUE(step.kind == Step::kSend || step.kind == Step::kRecv);
      const Slice& slot = step.kind == Step::kSend ? step.a : step.dst;
      EXPECT_EQ(slot.buffer, kUser);
      EXPECT_LE(slot.count * sizeof(float), 4096u);
      ++transfers;
    }
  }
  EXPECT_EQ(transfers, 2u * 2u * ((size_t{1} << 20) / 2 / 4096));  // 2 steps, a send and a receive, 128 pieces each
  EXPECT_EQ(plan.describe(), "2 x 4 KiB per peer and direction");
}

// Transfers side by side to one peer never share a slot, even when they outnumber the plan's slots: the ring grows
// to hold them.
TEST(StagingTest, TransfersSideBySideToOnePeerGetSlotsOfTheirOwn) {
  Schedule s;
  s.phases.resize(1);
  for (size_t i = 0; i < 5; ++i) {
    s.phases[0].comm.push_back(Step{Step::kSend, 1, Slice{kInput, i * 10, 10}, {}, {}});
    s.phases[0].comm.push_back(Step{Step::kRecv, 1, {}, {}, Slice{kOutput, i * 10, 10}});
  }
  const memory::StagedSchedule staged = memory::stageTransfers(s, 8, memory::StagingPlan{8 * 10, 2}, kUser);
  EXPECT_EQ(staged.staging_count, 2u * 5u * 10u);
  std::set<size_t> send_slots, recv_slots;
  for (const Phase& p : staged.schedule.phases) {
    for (const Step& step : p.comm) {
      (step.kind == Step::kSend ? send_slots : recv_slots).insert(step.kind == Step::kSend ? step.a.offset : step.dst.offset);
    }
  }
  EXPECT_EQ(send_slots.size(), 5u);
  EXPECT_EQ(recv_slots.size(), 5u);
  for (size_t offset : send_slots) EXPECT_EQ(recv_slots.count(offset), 0u);
}

}  // namespace
}  // namespace megascale
