// Every schedule, simulated in memory for every rank count 1..17 and awkward counts (0, 1, primes,
// count < ranks), in and out of place, against the mathematical definition of the collective.
#include "collectives/schedule.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "collectives/algorithm_choice.h"
#include "collectives/algorithms/registry.h"
#include "collectives/cost_model.h"
#include "collectives/host_layout.h"
#include "collectives/schedule_simulator.h"
#include "collectives/tuning.h"
#include "common/status.h"

namespace megascale {
namespace {

using testing::RankBuffers;

constexpr size_t kCounts[] = {0, 1, 2, 3, 5, 7, 13, 16, 17, 31, 97, 1000};
constexpr int64_t kSentinel = -777;

int64_t inputValue(int rank, size_t i) { return (rank + 1) * 100000 + static_cast<int64_t>(i % 9973) - 50; }

struct Case {
  Collective collective;
  Algorithm algorithm;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(collectiveName(info.param.collective)) + "_" + algorithmName(info.param.algorithm);
}

class ScheduleSuite : public ::testing::TestWithParam<Case> {};

// Fills inputs, runs, and checks outputs for one configuration. Returns a failure description or "".
std::string runCase(const Case& c, int n, size_t count, int root, bool in_place, mscRedOp_t op,
                    const HostLayout* hosts = nullptr, bool host_steps = false) {
  ScheduleSpec spec{c.collective, c.algorithm, count, 0, n, root, in_place, hosts};
  spec.host_steps = host_steps;
  std::vector<RankBuffers> buffers(n);
  size_t in_count = inputCount(spec), out_count = outputCount(spec);
  for (int r = 0; r < n; ++r) {
    std::vector<int64_t> input(in_count), output(out_count, kSentinel);
    for (size_t i = 0; i < in_count; ++i) input[i] = inputValue(r, i);
    if (in_place) {
      // The input lives inside the output buffer, where NCCL's in-place convention puts it.
      size_t size = std::max(in_count, out_count);
      output.resize(size, kSentinel);
      size_t at = c.collective == Collective::kAllGather ? count * r : 0;
      std::copy(input.begin(), input.end(), output.begin() + at);
    }
    auto bytes = [](const std::vector<int64_t>& v) {
      const uint8_t* p = reinterpret_cast<const uint8_t*>(v.data());
      return std::vector<uint8_t>(p, p + v.size() * sizeof(int64_t));
    };
    buffers[r].input = bytes(input);
    buffers[r].output = bytes(output);
  }
  auto sim = testing::simulate(spec, mscInt64, op, buffers);
  if (!sim.ok) return sim.error;
  auto combine = [&](int64_t a, int64_t b) { return op == mscMax ? std::max(a, b) : a + b; };
  auto reduced = [&](size_t index) {
    int64_t v = inputValue(0, index);
    for (int q = 1; q < n; ++q) v = combine(v, inputValue(q, index));
    return v;
  };
  for (int r = 0; r < n; ++r) {
    const int64_t* out = reinterpret_cast<const int64_t*>(buffers[r].output.data());
    size_t base = in_place && c.collective == Collective::kReduceScatter ? count * r : 0;
    for (size_t i = 0; i < out_count; ++i) {
      int64_t expected = kSentinel;
      switch (c.collective) {
        case Collective::kAllReduce: expected = reduced(i); break;
        case Collective::kAllGather: expected = inputValue(static_cast<int>(i / std::max<size_t>(count, 1)), i % std::max<size_t>(count, 1)); break;
        case Collective::kReduceScatter: expected = reduced(count * r + i); break;
        case Collective::kBroadcast: expected = inputValue(root, i); break;
        case Collective::kReduce: expected = r == root ? reduced(i) : (in_place ? inputValue(r, i) : kSentinel); break;
        case Collective::kAllToAll: expected = inputValue(static_cast<int>(i / count), count * r + i % count); break;
        default: break;
      }
      if (out[base + i] != expected) {
        return "rank " + std::to_string(r) + " element " + std::to_string(i) + ": got " + std::to_string(out[base + i]) +
               ", expected " + std::to_string(expected);
      }
    }
  }
  if (c.collective == Collective::kBarrier) {
    for (int r = 0; r < n; ++r) {
      for (int q = 0; q < n; ++q) {
        if (!sim.heard_from[r][q]) return "rank " + std::to_string(r) + " left the barrier before hearing from " + std::to_string(q);
      }
    }
  }
  return "";
}

TEST_P(ScheduleSuite, CorrectForEveryRankCountAndAwkwardCounts) {
  const Case c = GetParam();
  bool rooted = c.collective == Collective::kBroadcast || c.collective == Collective::kReduce;
  for (int n = 1; n <= 17; ++n) {
    for (size_t count : kCounts) {
      if (c.collective == Collective::kBarrier && count > 0) continue;
      std::vector<int> roots = rooted ? std::vector<int>{0, n - 1, n / 2} : std::vector<int>{0};
      for (int root : roots) {
        for (bool in_place : {false, true}) {
          std::string error = runCase(c, n, count, root, in_place, mscSum);
          ASSERT_EQ(error, "") << collectiveName(c.collective) << "/" << algorithmName(c.algorithm) << " n=" << n
                               << " count=" << count << " root=" << root << " in_place=" << in_place;
        }
      }
    }
  }
}

TEST_P(ScheduleSuite, MaxReductionUsesTheSameSchedule) {
  const Case c = GetParam();
  for (int n : {2, 5, 8}) {
    ASSERT_EQ(runCase(c, n, 37, 1 % n, false, mscMax), "") << "n=" << n;
  }
}

// Every row's every collective (the hierarchical row, which needs a host layout, has its own tests below): a new
// algorithm is tested here by being registered.
std::vector<Case> everyFlatCase() {
  std::vector<Case> cases;
  for (const algorithms::AlgorithmRow* row : algorithms::rows()) {
    if (row->id == Algorithm::kHierarchical) continue;
    for (size_t c = 0; c < kCollectiveCount; ++c) {
      if (row->implements(static_cast<Collective>(c))) cases.push_back(Case{static_cast<Collective>(c), row->id});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ScheduleSuite, ::testing::ValuesIn(everyFlatCase()), caseName);

TEST(Schedule, EveryCollectiveHasItsRowsAndADefault) {
  std::set<std::string> names;
  std::set<Algorithm> ids;
  for (const algorithms::AlgorithmRow* row : algorithms::rows()) {
    EXPECT_TRUE(names.insert(row->name).second) << row->name;
    EXPECT_TRUE(ids.insert(row->id).second) << row->name;
    Algorithm parsed;
    ASSERT_TRUE(parseAlgorithm(row->name, &parsed));
    EXPECT_EQ(parsed, row->id);
    EXPECT_STREQ(algorithmName(row->id), row->name);
  }
  for (size_t c = 0; c + 1 < kCollectiveCount; ++c) {  // all but point-to-point groups
    const Collective collective = static_cast<Collective>(c);
    const ScheduleSpec spec{collective, Algorithm::kAuto, 1, 0, 4};
    const Algorithm chosen = chooseAlgorithm(spec, 4);
    ASSERT_NE(chosen, Algorithm::kAuto) << collectiveName(collective);
    EXPECT_TRUE(algorithms::rowOf(chosen)->implements(collective)) << collectiveName(collective);
  }
}

// Hierarchical schedules over every layout of 1..5 hosts with 1..4 ranks each, hosts of uneven sizes, and
// hosts whose ranks interleave (a launcher that numbers ranks round-robin).
std::vector<HostLayout> layoutsToTest() {
  std::vector<HostLayout> layouts;
  for (int hosts = 1; hosts <= 5; ++hosts) {
    for (int per_host = 1; per_host <= 4; ++per_host) layouts.push_back(HostLayout::blocks(hosts, per_host));
  }
  for (const std::vector<int>& host_of : std::vector<std::vector<int>>{
           {0, 0, 0, 1, 1}, {0, 1, 1, 1}, {0, 0, 1, 2, 2, 2, 2}, {0, 1, 0, 1}, {0, 1, 2, 0, 1, 2, 0, 1},
           {3, 3, 1, 1, 2, 2, 2}, {0, 0, 0, 0, 1}}) {
    layouts.push_back(HostLayout::fromHostOf(host_of));
  }
  return layouts;
}

std::string describeLayout(const HostLayout& layout) {
  std::string text;
  for (const auto& ranks : layout.ranks_of) {
    text += "[";
    for (int r : ranks) text += std::to_string(r) + (r == ranks.back() ? "" : " ");
    text += "]";
  }
  return text;
}

TEST(HierarchicalSchedule, CorrectForEveryLayoutAndAwkwardCounts) {
  for (Collective collective : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
    for (const HostLayout& layout : layoutsToTest()) {
      for (size_t count : kCounts) {
        for (bool in_place : {false, true}) {
          for (mscRedOp_t op : {mscSum, mscMax}) {
            // With the node engine as the host stage (all-reduce chunks that split evenly), and without.
            for (bool host_steps : {false, true}) {
              // Across hosts, host steps serve all-reduce chunks; on one host, every collective is one step.
              if (host_steps && collective != Collective::kAllReduce && layout.hosts() > 1) continue;
              std::string error =
                  runCase({collective, Algorithm::kHierarchical}, layout.ranks(), count, 0, in_place, op, &layout, host_steps);
              ASSERT_EQ(error, "") << collectiveName(collective) << " hosts " << describeLayout(layout) << " count=" << count
                                   << " in_place=" << in_place << " op=" << op << " host_steps=" << host_steps;
            }
          }
        }
      }
    }
  }
}

// Large enough to be cut into pipelined chunks (one chunk per 64 Ki elements, at most 4), with ragged ends.
TEST(HierarchicalSchedule, PipelinedChunksAreCorrect) {
  for (Collective collective : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
    for (const HostLayout& layout : {HostLayout::fromHostOf({0, 0, 0, 1, 1}), HostLayout::fromHostOf({0, 1, 0, 1})}) {
      for (size_t count : {size_t{196611}}) {  // 3 chunks, ragged
        for (bool in_place : {false, true}) {
          std::string error = runCase({collective, Algorithm::kHierarchical}, layout.ranks(), count, 0, in_place, mscSum, &layout);
          ASSERT_EQ(error, "") << collectiveName(collective) << " hosts " << describeLayout(layout) << " count=" << count
                               << " in_place=" << in_place;
        }
      }
    }
  }
  // Host steps: 196613 cuts into chunks of 65538, 65538 and 65537 elements (the first two through the node
  // engine, the last, with the remainder, through transfers: both in one schedule); 196612 into 3 chunks of
  // 65538 and 262144 into 4 even ones, all through the engine.
  for (const HostLayout& layout : {HostLayout::blocks(3, 2), HostLayout::fromHostOf({0, 1, 0, 1})}) {
    for (size_t count : {size_t{196613}, size_t{196612}, size_t{262144}}) {
      for (bool in_place : {false, true}) {
        std::string error =
            runCase({Collective::kAllReduce, Algorithm::kHierarchical}, layout.ranks(), count, 0, in_place, mscSum, &layout, true);
        ASSERT_EQ(error, "") << "host steps, hosts " << describeLayout(layout) << " count=" << count << " in_place=" << in_place;
      }
    }
  }
  // Chunks overlap: with 4 chunks, a 3-host all-reduce takes 3 phases more than one chunk's 6, not 3 x 6 more.
  const HostLayout layout = HostLayout::blocks(3, 2);
  const Schedule s = buildSchedule({Collective::kAllReduce, Algorithm::kHierarchical, 4 << 16, 0, 6, 0, false, &layout});
  EXPECT_EQ(s.phases.size(), 6u + 3u);
}

TEST(HierarchicalSchedule, RailsCarryTheInterHostTrafficInParallel) {
  // 4 hosts x 2 ranks: each rank sends to other hosts only its rail's part (half of the vector, reduced and
  // gathered around a 4-host ring): 2 x (3/4) x (N/2) elements, where a flat ring sends 2 x (7/8) x N.
  const HostLayout layout = HostLayout::blocks(4, 2);
  const size_t n = 8000;
  for (int rank = 0; rank < 8; ++rank) {
    const Schedule s = buildSchedule({Collective::kAllReduce, Algorithm::kHierarchical, n, rank, 8, 0, false, &layout});
    size_t off_host = 0, on_host = 0;
    for (const Phase& p : s.phases) {
      for (const Step& st : p.comm) {
        if (st.kind != Step::kSend) continue;
        (layout.host_of[static_cast<size_t>(st.peer)] == layout.host_of[static_cast<size_t>(rank)] ? on_host : off_host) += st.a.count;
        if (layout.host_of[static_cast<size_t>(st.peer)] != layout.host_of[static_cast<size_t>(rank)]) {
          EXPECT_EQ(layout.local_of[static_cast<size_t>(st.peer)], layout.local_of[static_cast<size_t>(rank)])
              << "rank " << rank << " left its rail";
        }
      }
    }
    EXPECT_EQ(off_host, 2 * 3 * (n / 2) / 4) << "rank " << rank;
    EXPECT_EQ(on_host, n) << "rank " << rank;  // half to the other owner, its finished half back
  }
}

// With the node engine as the host stage, an all-reduce chunk's host-local stages are one reduce-scatter and one
// all-gather of the engine: no transfer stays inside the host, the rails' traffic is unchanged. A chunk that does
// not split evenly, or a host with more ranks than owners, keeps the transfers.
TEST(HierarchicalSchedule, HostStepsReplaceTheIntraHostTransfers) {
  const auto count = [](const Schedule& s, const HostLayout& layout, int rank, size_t* on_host, size_t* off_host) {
    size_t host_steps = 0;
    for (const Phase& p : s.phases) {
      for (const Step& st : p.comm) {
        if (st.isHost()) ++host_steps;
        if (st.kind != Step::kSend) continue;
        (layout.host_of[static_cast<size_t>(st.peer)] == layout.host_of[static_cast<size_t>(rank)] ? *on_host : *off_host) += st.a.count;
      }
    }
    return host_steps;
  };
  const HostLayout layout = HostLayout::blocks(4, 2);
  for (int rank = 0; rank < 8; ++rank) {
    ScheduleSpec spec{Collective::kAllReduce, Algorithm::kHierarchical, 8000, rank, 8, 0, false, &layout};
    spec.host_steps = true;
    size_t on_host = 0, off_host = 0;
    EXPECT_EQ(count(buildSchedule(spec), layout, rank, &on_host, &off_host), 2u) << "rank " << rank;
    EXPECT_EQ(on_host, 0u) << "rank " << rank;
    EXPECT_EQ(off_host, 2 * 3 * (8000 / 2) / 4) << "rank " << rank;
    spec.count = 8001;  // odd: the parts are uneven, the engine's blocks are not
    on_host = off_host = 0;
    EXPECT_EQ(count(buildSchedule(spec), layout, rank, &on_host, &off_host), 0u) << "rank " << rank;
    EXPECT_GT(on_host, 0u) << "rank " << rank;
  }
  const HostLayout uneven = HostLayout::fromHostOf({0, 0, 0, 1, 1});  // host 0 has a rank that owns nothing
  for (int rank = 0; rank < 5; ++rank) {
    ScheduleSpec spec{Collective::kAllReduce, Algorithm::kHierarchical, 8000, rank, 5, 0, false, &uneven};
    spec.host_steps = true;
    size_t on_host = 0, off_host = 0;
    EXPECT_EQ(count(buildSchedule(spec), uneven, rank, &on_host, &off_host), rank < 3 ? 0u : 2u) << "rank " << rank;
  }
}

// Chunks start at multiples of the owners per host, so a count that is no multiple of chunks x owners (most
// gradient buckets) still runs every chunk but the last through the engine; the last takes the remainder.
TEST(HierarchicalSchedule, ChunksAlignToTheEnginesBlocks) {
  const HostLayout layout = HostLayout::blocks(2, 4);
  const size_t chunks = 15;  // 1,000,000 elements / 64 Ki
  for (size_t count : {size_t{1000000}, size_t{1000003}}) {
    for (int rank = 0; rank < 8; ++rank) {
      ScheduleSpec spec{Collective::kAllReduce, Algorithm::kHierarchical, count, rank, 8, 0, false, &layout};
      spec.host_steps = true;
      size_t host_steps = 0, engine_elements = 0;
      for (const Phase& p : buildSchedule(spec).phases) {
        for (const Step& st : p.comm) {
          if (st.kind != Step::kHostReduceScatter) continue;
          ++host_steps;
          EXPECT_EQ(st.a.count % 4, 0u) << "rank " << rank;
          engine_elements += st.a.count;
        }
      }
      const bool remainder = count % 4 != 0;
      EXPECT_EQ(host_steps, remainder ? chunks - 1 : chunks) << "count " << count << " rank " << rank;
      EXPECT_GE(engine_elements, remainder ? count * (chunks - 1) / chunks : count) << "count " << count << " rank " << rank;
    }
  }
}

// On one host served by the node engine, all-reduce, all-gather and reduce-scatter are the engine's own
// collective: one phase of one host step over the whole buffers, whatever the count (the engine has no blocks to
// split evenly). Without the engine they stay transfers.
TEST(HierarchicalSchedule, OneHostWithTheEngineIsOneHostStep) {
  for (int ranks = 2; ranks <= 4; ++ranks) {
    const HostLayout layout = HostLayout::blocks(1, ranks);
    for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
      for (size_t count : {size_t{1}, size_t{7}, size_t{1} << 20}) {
        ScheduleSpec spec{c, Algorithm::kHierarchical, count, ranks - 1, ranks, 0, false, &layout};
        spec.host_steps = true;
        const Schedule s = buildSchedule(spec);
        ASSERT_EQ(s.phases.size(), 1u) << describeSchedule(s);
        ASSERT_EQ(s.phases[0].comm.size(), 1u) << describeSchedule(s);
        EXPECT_TRUE(s.phases[0].local.empty());
        const Step& step = s.phases[0].comm[0];
        const size_t all = count * static_cast<size_t>(ranks);
        switch (c) {
          case Collective::kAllReduce:
            EXPECT_EQ(step.kind, Step::kHostAllReduce);
            EXPECT_EQ(step.a.count, count);
            EXPECT_EQ(s.result.count, count);  // where an average divides
            break;
          case Collective::kAllGather:
            EXPECT_EQ(step.kind, Step::kHostAllGather);
            EXPECT_EQ(step.dst.count, all);
            EXPECT_EQ(s.result.count, 0u);
            break;
          default:
            EXPECT_EQ(step.kind, Step::kHostReduceScatter);
            EXPECT_EQ(step.a.count, all);
            EXPECT_EQ(s.result.count, count);
        }
        spec.host_steps = false;
        for (const Phase& p : buildSchedule(spec).phases) {
          for (const Step& st : p.comm) EXPECT_FALSE(st.isHost());
        }
      }
    }
  }
}

TEST(HierarchicalSchedule, RefusesToRunWithoutALayout) {
  EXPECT_THROW(buildSchedule({Collective::kAllReduce, Algorithm::kHierarchical, 10, 0, 4}), Error);
  const HostLayout two = HostLayout::blocks(2, 1);
  EXPECT_THROW(buildSchedule({Collective::kAllReduce, Algorithm::kHierarchical, 10, 0, 4, 0, false, &two}), Error);
}

TEST(HostLayout, NumbersHostsByTheirLowestRank) {
  const HostLayout l = HostLayout::fromKeys({77, 5, 77, 9, 5});
  EXPECT_EQ(l.host_of, (std::vector<int>{0, 1, 0, 2, 1}));
  EXPECT_EQ(l.local_of, (std::vector<int>{0, 0, 1, 0, 1}));
  EXPECT_EQ(l.minRanksPerHost(), 1);
  EXPECT_TRUE(l.hierarchical());
  EXPECT_FALSE(HostLayout::blocks(1, 4).hierarchical());
  EXPECT_FALSE(HostLayout::blocks(4, 1).hierarchical());
}

// On one host, auto takes the tuning table's row for the shape and size (whatever tune.sh measured), and the
// cost model where the table has no row for the shape.
TEST(Schedule, AutoFollowsTheTuningTableWhereItHasTheShape) {
  for (size_t count : {size_t{4}, size_t{16} << 10, size_t{4} << 20}) {
    const ScheduleSpec spec{Collective::kAllReduce, Algorithm::kAuto, count, 0, 4};
    const std::optional<Algorithm> tuned = tunedAllReduceAlgorithm(1, 4, count * 4);
    ASSERT_TRUE(tuned.has_value()) << count;
    EXPECT_EQ(chooseAlgorithm(spec, 4), *tuned) << count;
  }
  const ScheduleSpec huge{Collective::kAllReduce, Algorithm::kAuto, 1 << 20, 0, 4096};
  ASSERT_FALSE(tunedAllReduceAlgorithm(1, 4096, 4 << 20).has_value());
  EXPECT_EQ(chooseAlgorithm(huge, 4), modelAllReduceAlgorithm(ClusterShape{1, 4096, 4096}, LinkCosts{}, 1 << 20, 4));
}

TEST(Schedule, TuningTableAnswersForEveryMeasuredShapeAndSize) {
  for (const TuningRow& row : allReduceTuningTable()) {
    EXPECT_LE(row.min_ranks_per_host, row.max_ranks_per_host);
    ASSERT_NE(algorithms::rowOf(row.algorithm), nullptr);
    EXPECT_TRUE(algorithms::rowOf(row.algorithm)->implements(Collective::kAllReduce)) << algorithmName(row.algorithm);
  }
  EXPECT_NE(std::string(tuningTableMachine()), "");
  for (int n = 2; n <= 8; ++n) {
    for (size_t bytes = 1; bytes <= (size_t(1) << 34); bytes *= 4) {
      const std::optional<Algorithm> a = tunedAllReduceAlgorithm(1, n, bytes);
      ASSERT_TRUE(a.has_value()) << n << " ranks, " << bytes << " bytes";
      EXPECT_NE(buildSchedule({Collective::kAllReduce, *a, bytes / 4 % 1000, 0, n}).phases.size(), 0u);
      // Whatever a table says, the chooser keeps to the rows' limits (direct: 1 MiB).
      const Algorithm chosen = chooseAlgorithm({Collective::kAllReduce, Algorithm::kAuto, bytes / 4, 0, n}, 4);
      EXPECT_LE(bytes / 4 * 4, algorithms::rowOf(chosen)->max_bytes) << n << " ranks, " << bytes << " bytes";
    }
  }
  EXPECT_EQ(tunedAllReduceAlgorithm(1, 8, size_t(1) << 34), Algorithm::kRing);  // huge: bandwidth-optimal
}

TEST(Schedule, WrongAlgorithmForCollectiveIsAnError) {
  ScheduleSpec spec{Collective::kBroadcast, Algorithm::kRing, 10, 0, 4};
  EXPECT_THROW(buildSchedule(spec), Error);
  ScheduleSpec bad_rank{Collective::kAllReduce, Algorithm::kRing, 10, 4, 4};
  EXPECT_THROW(buildSchedule(bad_rank), Error);
}

size_t elementsSent(const Schedule& s) {
  size_t sent = 0;
  for (const Phase& p : s.phases)
    for (const Step& st : p.comm)
      if (st.kind == Step::kSend) sent += st.a.count;
  return sent;
}

TEST(Schedule, RingMovesTheBandwidthOptimalAmount) {
  // Each rank sends 2(n-1)/n of the vector in a ring all-reduce: the busbw factor nccl-tests assumes.
  const int n = 8;
  const size_t count = 8000;
  EXPECT_EQ(elementsSent(buildSchedule({Collective::kAllReduce, Algorithm::kRing, count, 3, n})), 2 * (n - 1) * count / n);
}

TEST(DoubleTreeSchedule, PipelinedChunksAreCorrect) {
  // Counts that cut each half into several 64 Ki-element chunks, uneven last chunks included.
  for (int n : {2, 3, 6, 7}) {
    for (size_t count : {size_t{(64 << 10) * 2 + 1}, size_t{(64 << 10) * 6 + 13}}) {
      for (bool in_place : {false, true}) {
        ASSERT_EQ(runCase({Collective::kAllReduce, Algorithm::kDoubleBinaryTree}, n, count, 0, in_place, mscSum), "")
            << "n=" << n << " count=" << count << " in_place=" << in_place;
      }
    }
  }
}

TEST(PipelinedRingSchedule, SectionsAreCorrectAndOneReducesWhileTheNextTransfers) {
  const size_t count = (size_t{256} << 10) * 3 + 7;  // three sections of 256 Ki elements and a bit
  for (int n : {2, 3, 5}) {
    for (bool in_place : {false, true}) {
      ASSERT_EQ(runCase({Collective::kAllReduce, Algorithm::kPipelinedRing}, n, count, 0, in_place, mscSum), "")
          << "n=" << n << " in_place=" << in_place;
    }
    // The executor starts a step once the earlier steps touching its bytes are done: no next-phase transfer
    // touches a phase's reductions here, which is the whole point of the sections.
    const Schedule s = buildSchedule({Collective::kAllReduce, Algorithm::kPipelinedRing, count, 1, n});
    ASSERT_EQ(s.phases.size(), 3 * 2 * static_cast<size_t>(n - 1));
    const auto overlaps = [](const Slice& x, const Slice& y) {
      return x.buffer == y.buffer && x.count > 0 && y.count > 0 && x.offset < y.offset + y.count &&
             y.offset < x.offset + x.count;
    };
    for (size_t p = 0; p + 1 < s.phases.size(); ++p) {
      for (const Step& local : s.phases[p].local) {
        for (const Step& next : s.phases[p + 1].comm) {
          const Slice& touched = next.kind == Step::kSend ? next.a : next.dst;
          EXPECT_FALSE(overlaps(touched, local.dst) || overlaps(touched, local.a) || overlaps(touched, local.b))
              << "n=" << n << " phase " << p;
        }
      }
    }
  }
}

TEST(DoubleTreeSchedule, LogarithmicDepthAndBalancedTraffic) {
  // What makes it the algorithm for thousands of ranks: 2 log2(n) hops plus one phase per chunk, where the ring
  // takes 2(n-1) phases, while no rank sends or receives much more than a ring rank does (~2x the vector).
  for (int n : {2, 5, 64, 1000, 1536}) {
    const size_t count = size_t{64 << 10} * 2 * 16;  // 16 chunks per half
    int depth = 1;
    for (int p = 1; p * 2 < n; p *= 2) ++depth;
    size_t most_sent = 0, most_received = 0;
    std::vector<size_t> received(static_cast<size_t>(n));
    for (int rank = 0; rank < n; ++rank) {
      const Schedule s = buildSchedule({Collective::kAllReduce, Algorithm::kDoubleBinaryTree, count, rank, n});
      ASSERT_EQ(s.phases.size(), 16u + 2 * static_cast<size_t>(depth) - 1) << "n=" << n;
      most_sent = std::max(most_sent, elementsSent(s));
      size_t in = 0;
      for (const Phase& p : s.phases)
        for (const Step& st : p.comm)
          if (st.kind == Step::kRecv) in += st.dst.count;
      most_received = std::max(most_received, in);
    }
    EXPECT_LE(most_sent, 2 * count) << "n=" << n;
    EXPECT_LE(most_received, 2 * count) << "n=" << n;
  }
}

}  // namespace
}  // namespace megascale
