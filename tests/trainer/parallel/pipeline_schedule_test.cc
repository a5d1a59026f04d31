// Pipeline schedules, checked the way the collective schedules are: every rank's list is run together in an
// event simulator with FIFO links and compute times, which must finish (no deadlock), match every send to the
// receive posted for it, run each micro-batch's forward before its backward on every chunk, and give the
// bubble the 1F1B analysis predicts.
#include "trainer/parallel/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

namespace megascale::trainer {
namespace {

struct Message {
  int micro_batch, chunk;  // the receiver's chunk
  double time;
};

struct Simulation {
  bool finished = false;
  std::string error;
  double makespan = 0;
  std::vector<int> peak_live;  // most forwards awaiting their backward on each rank
};

// Runs all ranks' schedules; forward costs tf / V and backward tb / V per chunk (a rank's V chunks together
// hold one stage's worth of layers); a message arrives `hop` after it is sent.
Simulation simulate(const PipelineShape& shape, double tf, double tb, double hop = 0) {
  using Link = std::tuple<int, int, bool>;  // sender, receiver, gradient
  const int p = shape.stages;
  std::vector<std::vector<PipeAction>> plan;
  for (int r = 0; r < p; ++r) plan.push_back(pipelineSchedule(shape, r));
  std::vector<size_t> pc(static_cast<size_t>(p), 0);
  std::vector<double> clock(static_cast<size_t>(p), 0);
  std::vector<int> live(static_cast<size_t>(p), 0);
  Simulation sim;
  sim.peak_live.assign(static_cast<size_t>(p), 0);
  std::map<Link, std::vector<Message>> sent;
  std::map<Link, std::vector<std::pair<int, int>>> posted;
  std::map<std::tuple<int, int, int, bool>, size_t> posted_index;  // (rank, mb, chunk, gradient) -> index
  std::set<std::tuple<int, int, int>> forwarded, backwarded;
  const double scale = 1.0 / shape.virtual_stages;

  // The posted receive for a compute, if its message has arrived: returns false while it has not.
  auto input = [&](int r, const PipeAction& a, bool gradient, const StagePeer& from, double& ready) {
    const Link link{from.rank, r, gradient};
    auto it = posted_index.find({r, a.micro_batch, a.chunk, gradient});
    if (it == posted_index.end()) {
      sim.error = "rank " + std::to_string(r) + " computes " + describe({a}) + " without posting its receive";
      return false;
    }
    const auto& messages = sent[link];
    if (messages.size() <= it->second) return false;
    const Message& m = messages[it->second];
    if (m.micro_batch != a.micro_batch || m.chunk != a.chunk) {
      sim.error = "link " + std::to_string(from.rank) + "->" + std::to_string(r) + " delivers " +
                  std::to_string(m.micro_batch) + "." + std::to_string(m.chunk) + " to the receive of " +
                  describe({a});
      return false;
    }
    ready = m.time;
    return true;
  };

  for (bool progress = true; progress && sim.error.empty();) {
    progress = false;
    for (int r = 0; r < p && sim.error.empty(); ++r) {
      auto& i = pc[static_cast<size_t>(r)];
      double& now = clock[static_cast<size_t>(r)];
      while (i < plan[static_cast<size_t>(r)].size() && sim.error.empty()) {
        const PipeAction& a = plan[static_cast<size_t>(r)][i];
        double ready = 0;
        if (a.op == PipeOp::kRecvActivation || a.op == PipeOp::kRecvGradient) {
          const bool gradient = a.op == PipeOp::kRecvGradient;
          const StagePeer from = gradient ? nextStage(shape, r, a.chunk) : previousStage(shape, r, a.chunk);
          auto& list = posted[{from.rank, r, gradient}];
          posted_index[{r, a.micro_batch, a.chunk, gradient}] = list.size();
          list.emplace_back(a.micro_batch, a.chunk);
        } else if (a.op == PipeOp::kForward) {
          if (!isFirstStage(shape, r, a.chunk) && !input(r, a, false, previousStage(shape, r, a.chunk), ready)) break;
          now = std::max(now, ready) + tf * scale;
          forwarded.insert({r, a.micro_batch, a.chunk});
          auto& n = live[static_cast<size_t>(r)];
          sim.peak_live[static_cast<size_t>(r)] = std::max(sim.peak_live[static_cast<size_t>(r)], ++n);
        } else if (a.op == PipeOp::kBackward) {
          if (!isLastStage(shape, r, a.chunk) && !input(r, a, true, nextStage(shape, r, a.chunk), ready)) break;
          if (!forwarded.count({r, a.micro_batch, a.chunk})) sim.error = "backward before forward: " + describe({a});
          now = std::max(now, ready) + tb * scale;
          backwarded.insert({r, a.micro_batch, a.chunk});
          --live[static_cast<size_t>(r)];
        } else {
          const bool gradient = a.op == PipeOp::kSendGradient;
          const StagePeer to = gradient ? previousStage(shape, r, a.chunk) : nextStage(shape, r, a.chunk);
          sent[{r, to.rank, gradient}].push_back({a.micro_batch, to.chunk, now + hop});
        }
        ++i;
        progress = true;
      }
    }
  }
  if (!sim.error.empty()) return sim;
  for (int r = 0; r < p; ++r) {
    if (pc[static_cast<size_t>(r)] != plan[static_cast<size_t>(r)].size()) {
      sim.error = "deadlock: rank " + std::to_string(r) + " stuck at action " + std::to_string(pc[static_cast<size_t>(r)]);
      return sim;
    }
    sim.makespan = std::max(sim.makespan, clock[static_cast<size_t>(r)]);
  }
  for (const auto& [link, messages] : sent) {
    if (posted[link].size() != messages.size()) sim.error = "a link carries a message nobody receives";
  }
  const size_t expected = static_cast<size_t>(p * shape.virtual_stages * shape.micro_batches);
  if (forwarded.size() != expected || backwarded.size() != expected) sim.error = "a forward or backward is missing";
  sim.finished = sim.error.empty();
  return sim;
}

TEST(PipelineSchedule, OneF1BOnTwoStagesReadsAsExpected) {
  const PipelineShape shape{2, 1, 3};
  EXPECT_EQ(describe(pipelineSchedule(shape, 0)), "F0.0 sA0.0 rG0.0 F1.0 sA1.0 B0.0 rG1.0 F2.0 sA2.0 rG2.0 B1.0 B2.0");
  EXPECT_EQ(describe(pipelineSchedule(shape, 1)),
            "rA0.0 F0.0 rA1.0 B0.0 sG0.0 F1.0 rA2.0 B1.0 sG1.0 F2.0 B2.0 sG2.0");
}

TEST(PipelineSchedule, EveryShapeRunsToTheEndWithMatchedLinks) {
  for (int p = 1; p <= 5; ++p) {
    for (int v = 1; v <= 3; ++v) {
      if (v > 1 && p == 1) continue;
      std::vector<int> micro = {p, 2 * p, 3 * p};
      if (v == 1) micro.insert(micro.end(), {1, 3, 7});
      for (int m : micro) {
        for (int extra = 0; extra <= (v == 1 ? 2 : 0); ++extra) {
          const PipelineShape shape{p, v, m, extra};
          const Simulation sim = simulate(shape, 1.0, 2.0, 0.7);
          EXPECT_TRUE(sim.finished) << "P" << p << " V" << v << " M" << m << " E" << extra << ": " << sim.error;
        }
      }
      if (v == 1) continue;
      for (int group : {p + 1, 2 * p, 3 * p}) {
        for (int m : {group, 2 * group}) {
          const Simulation sim = simulate({p, v, m, 0, group}, 1.0, 2.0, 0.7);
          EXPECT_TRUE(sim.finished) << "P" << p << " V" << v << " M" << m << " G" << group << ": " << sim.error;
        }
      }
    }
  }
}

TEST(PipelineSchedule, OneF1BHasTheBubbleAndMemoryOfTheAnalysis) {
  for (int p = 1; p <= 5; ++p) {
    for (int m : {p, 2 * p, 8}) {
      const Simulation sim = simulate({p, 1, m}, 1.0, 2.0);
      ASSERT_TRUE(sim.finished) << sim.error;
      EXPECT_DOUBLE_EQ(sim.makespan, (m + p - 1) * 3.0) << "P" << p << " M" << m;  // bubble (p-1)/m
      for (int r = 0; r < p; ++r) EXPECT_LE(sim.peak_live[static_cast<size_t>(r)], std::min(p - r, m));
    }
  }
}

TEST(PipelineSchedule, InterleavingShrinksTheBubble) {
  for (int p : {2, 4}) {
    for (int v : {2, 3}) {
      const int m = 2 * p;
      const double plain = simulate({p, 1, m}, 1.0, 2.0).makespan;
      const Simulation interleaved = simulate({p, v, m}, 1.0, 2.0);
      ASSERT_TRUE(interleaved.finished) << interleaved.error;
      const double ideal = m * 3.0;
      EXPECT_LT(interleaved.makespan, plain) << "P" << p << " V" << v;
      // Narayanan et al.: the bubble shrinks by about V, (p - 1) / (v m) of the ideal.
      EXPECT_LE(interleaved.makespan - ideal, (plain - ideal) / v * 1.5) << "P" << p << " V" << v;
    }
  }
}

// Computes a rank runs after chunk c's last backward (where c's gradient reduce-scatter can hide) and before
// its first forward (where its parameter all-gather can hide).
std::pair<int, int> computesAroundChunk(const std::vector<PipeAction>& actions, int chunk, int micro_batches) {
  std::vector<PipeAction> computes;
  for (const PipeAction& a : actions) {
    if (a.op == PipeOp::kForward || a.op == PipeOp::kBackward) computes.push_back(a);
  }
  int after = -1, before = -1;
  for (size_t i = 0; i < computes.size(); ++i) {
    if (computes[i] == PipeAction{PipeOp::kBackward, micro_batches - 1, chunk}) after = static_cast<int>(computes.size() - 1 - i);
    if (before < 0 && computes[i] == PipeAction{PipeOp::kForward, 0, chunk}) before = static_cast<int>(i);
  }
  return {after, before};
}

TEST(PipelineSchedule, LargerMicroBatchGroupsWidenTheDataParallelWindows) {
  const int m = 16;
  // Chunk 0 takes micro-batches 0-3 before chunk 1 does (groups of P = 2 would alternate after two).
  EXPECT_EQ(describe(pipelineSchedule({2, 2, 8, 0, 4}, 0)).substr(0, 60),
            "F0.0 sA0.0 F1.0 sA1.0 F2.0 sA2.0 rA0.1 F3.0 sA3.0 rA1.1 F0.1");
  for (int p : {2, 4}) {
    const auto plain = computesAroundChunk(pipelineSchedule({p, 2, m}, 0), 1, m);
    const auto grouped = computesAroundChunk(pipelineSchedule({p, 2, m, 0, 2 * p}, 0), 1, m);
    EXPECT_EQ(plain, std::make_pair(p, p)) << "P" << p;
    EXPECT_EQ(grouped, std::make_pair(2 * p, 2 * p)) << "P" << p;
    // The bubble stays that of interleaving.
    EXPECT_DOUBLE_EQ(simulate({p, 2, m, 0, 2 * p}, 1.0, 2.0).makespan, simulate({p, 2, m}, 1.0, 2.0).makespan);
  }
}

TEST(PipelineSchedule, EagerWarmupHidesHopLatencyUpToHalfAComputeCycle) {
  for (int p = 2; p <= 5; ++p) {
    for (int m : {p, 2 * p, 8}) {
      for (double hop : {0.5, 1.5}) {  // up to (forward + backward) / 2
        const double ideal = (m + p - 1) * 3.0;
        const Simulation plain = simulate({p, 1, m}, 1.0, 2.0, hop);
        const Simulation eager = simulate({p, 1, m, 1}, 1.0, 2.0, hop);
        ASSERT_TRUE(eager.finished) << eager.error;
        // Only the fill's and the drain's hops remain: 2 (P - 1) of them.
        EXPECT_DOUBLE_EQ(eager.makespan, ideal + 2 * (p - 1) * hop) << "P" << p << " M" << m << " hop " << hop;
        if (m > p) {
          EXPECT_LT(eager.makespan, plain.makespan) << "P" << p << " M" << m;
        }
        for (int r = 0; r < p; ++r) EXPECT_LE(eager.peak_live[static_cast<size_t>(r)], std::min(2 * (p - r) - 1, m));
      }
    }
  }
}

TEST(PipelineSchedule, BadShapesAreRefusedWithTheValue) {
  EXPECT_THROW(pipelineSchedule({0, 1, 1}, 0), std::invalid_argument);
  EXPECT_THROW(pipelineSchedule({2, 1, 0}, 0), std::invalid_argument);
  EXPECT_THROW(pipelineSchedule({1, 2, 2}, 0), std::invalid_argument);  // interleaving needs 2+ stages
  EXPECT_THROW(pipelineSchedule({4, 2, 6}, 0), std::invalid_argument);  // M not a multiple of P
  EXPECT_THROW(pipelineSchedule({2, 1, 2}, 2), std::invalid_argument);
  EXPECT_THROW(pipelineSchedule({2, 1, 2, -1}, 0), std::invalid_argument);
  EXPECT_THROW(pipelineSchedule({2, 2, 4, 1}, 0), std::invalid_argument);  // eager warm-up is for plain 1F1B
  EXPECT_THROW(pipelineSchedule({2, 1, 4, 0, 2}, 0), std::invalid_argument);  // groups are for interleaving
  EXPECT_THROW(pipelineSchedule({4, 2, 8, 0, 2}, 0), std::invalid_argument);  // a group smaller than P
  EXPECT_THROW(pipelineSchedule({2, 2, 8, 0, 3}, 0), std::invalid_argument);  // M not a multiple of G
  EXPECT_THROW(pipelineSchedule({2, 2, 8, 0, -1}, 0), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::trainer
