#include "trainer/parallel/process_groups.h"

#include <gtest/gtest.h>

#include "trainer/rank_threads.h"

namespace megascale::trainer {
namespace {

using namespace std::chrono_literals;

TEST(ParallelLayout, TensorInnermostThenDataThenPipeline) {
  const ParallelLayout l = ParallelLayout::forWorld(16, 2, 4);  // Megatron's docstring example: DP = 2
  EXPECT_EQ(l.dp(), 2);
  EXPECT_EQ(l.stride(ParallelAxis::kData), 2);
  EXPECT_EQ(l.stride(ParallelAxis::kPipeline), 4);
  EXPECT_EQ(l.describe(), "tp2 x pp4 x dp2");
  EXPECT_EQ(l.describe("x"), "tp2xpp4xdp2") << "a rank-local checkpoint's layout line: checkpoints written before keep loading";
  for (int r = 0; r < 16; ++r) EXPECT_EQ(l.rankOf(l.coordinatesOf(r)), r);
  const auto c = l.coordinatesOf(5);  // TP groups [0,1],[2,3],..; DP [0,2],[1,3],[4,6],..; PP [0,4,8,12],..
  EXPECT_EQ(c.tp(), 1);
  EXPECT_EQ(c.dp(), 0);
  EXPECT_EQ(c.pp(), 1);
  EXPECT_EQ(l.describe(c), "tp 1 pp 1 dp 0");
  // The groups through rank 5 along each dimension: arithmetic progressions of world ranks.
  const auto tp_group = l.groupAlong(ParallelAxis::kTensor, c), pp_group = l.groupAlong(ParallelAxis::kPipeline, c);
  EXPECT_EQ((std::array<int, 3>{tp_group.first, tp_group.stride, tp_group.count}), (std::array<int, 3>{4, 1, 2}));
  EXPECT_EQ((std::array<int, 3>{pp_group.first, pp_group.stride, pp_group.count}), (std::array<int, 3>{1, 4, 4}));
  // A layout of other dimensions in another order needs no new formula: dp innermost, then tp.
  const ParallelLayout other{{{ParallelAxis::kData, 3}, {ParallelAxis::kTensor, 2}}};
  EXPECT_EQ(other.worldSize(), 6);
  EXPECT_EQ(other.pp(), 1);
  EXPECT_EQ(other.coordinatesOf(4).tp(), 1);
  EXPECT_EQ(other.coordinatesOf(4).dp(), 1);
  for (int r = 0; r < 6; ++r) EXPECT_EQ(other.rankOf(other.coordinatesOf(r)), r);
  EXPECT_THROW(ParallelLayout::forWorld(6, 4, 1), std::invalid_argument);
  EXPECT_THROW(ParallelLayout::forWorld(4, 0, 1), std::invalid_argument);
}

// Eight ranks tp2 x pp2 x dp2 with wrap-around links: every group holds the ranks the layout names, and each
// link carries a message from its sender to its receiver.
TEST(ProcessGroups, GroupsAndLinksConnectTheRanksTheLayoutNames) {
  for (bool wrap : {false, true}) {
    testing::runRanks(8, [&](int rank, std::shared_ptr<Communicator> world) {
      ProcessGroups g = ProcessGroups::create(world, 2, 2, wrap);
      const ParallelLayout& l = g.layout;
      EXPECT_EQ(g.tp->size(), 2);
      EXPECT_EQ(g.dp->size(), 2);
      EXPECT_EQ(g.pp->size(), 2);
      EXPECT_EQ(g.tp->rank(), g.me.tp());
      EXPECT_EQ(g.dp->rank(), g.me.dp());
      EXPECT_EQ(g.pp->rank(), g.me.pp());
      // Who are my TP/DP peers? All-gather world ranks inside each group.
      for (auto [comm, axis] : {std::pair{g.tp, ParallelAxis::kTensor}, std::pair{g.dp, ParallelAxis::kData},
                                std::pair{g.pp, ParallelAxis::kPipeline}}) {
        EXPECT_EQ(comm, g.along[static_cast<size_t>(axis)]);
        int mine = rank;
        std::vector<int> all(static_cast<size_t>(comm->size()));
        ASSERT_TRUE(comm->allGather(&mine, all.data(), 1, mscInt32)->wait(30s).isOk());
        for (int i = 0; i < comm->size(); ++i) {
          ParallelLayout::Coordinates expected = g.me;
          expected[axis] = i;
          EXPECT_EQ(all[static_cast<size_t>(i)], l.rankOf(expected));
        }
      }
      EXPECT_EQ(g.embedding != nullptr, true);  // with two stages both are the embedding's ends
      const bool has_next = wrap || g.me.pp() == 0, has_previous = wrap || g.me.pp() == 1;
      ASSERT_EQ(g.next.activations != nullptr, has_next);
      ASSERT_EQ(g.previous.activations != nullptr, has_previous);
      int sent = rank * 10, got_activation = -1, got_gradient = -1;
      std::vector<std::shared_ptr<Work>> works;
      if (has_next) {
        works.push_back(g.next.activations->pointToPoint({{true, &sent, 1, mscInt32, g.next.peer}}));
        works.push_back(g.next.gradients->pointToPoint({{false, &got_gradient, 1, mscInt32, g.next.peer}}));
      }
      if (has_previous) {
        works.push_back(g.previous.activations->pointToPoint({{false, &got_activation, 1, mscInt32, g.previous.peer}}));
        works.push_back(g.previous.gradients->pointToPoint({{true, &sent, 1, mscInt32, g.previous.peer}}));
      }
      for (auto& w : works) ASSERT_TRUE(w->wait(30s).isOk());
      if (has_previous) {
        EXPECT_EQ(got_activation, g.previous.peer_global * 10);
      }
      if (has_next) {
        EXPECT_EQ(got_gradient, g.next.peer_global * 10);
      }
    });
  }
}

}  // namespace
}  // namespace megascale::trainer
