// Stragglers: a rank slow on its own stands out against the ranks that do the same work, however its pipeline
// stage's work compares with another stage's.
#include "trainer/monitor/stragglers.h"

#include <gtest/gtest.h>

namespace megascale::trainer {
namespace {

// 8 ranks, pipeline stages of 4 (stage 1 does 1.5x the work of stage 0); rank 5 is 1.8x slower than its stage.
StragglerInput eightRanks() {
  StragglerInput in;
  for (int r = 0; r < 8; ++r) {
    const double base = r < 4 ? 0.100 : 0.150;
    std::vector<double> steps;
    for (int s = 0; s < 20; ++s) steps.push_back(base * (r == 5 ? 1.8 : 1.0) * (1 + 0.01 * ((s * 7 + r) % 5)));
    in.compute_s.push_back(steps);
    in.peer_group.push_back(r / 4);
    in.names.push_back("rank " + std::to_string(r) + " (pp " + std::to_string(r / 4) + ")");
  }
  return in;
}

TEST(Stragglers, NamesTheRankSlowAgainstItsOwnStage) {
  const StragglerInput in = eightRanks();
  const StragglerReport report = findStragglers(in);
  ASSERT_EQ(report.ranks.size(), 8u);
  EXPECT_EQ(report.ranks.front().rank, 5);
  EXPECT_NEAR(report.ranks.front().ratio, 1.8, 0.05);
  const auto slow = report.slow(1.3);
  ASSERT_EQ(slow.size(), 1u) << "stage 1's other ranks are not slow: their stage does more work";
  EXPECT_EQ(slow[0].rank, 5);
  const std::string text = describeStragglers(in, report, 1);
  EXPECT_EQ(text.rfind("rank 5 (pp 1): ", 0), 0u) << text;
  EXPECT_NE(text.find("1.8"), std::string::npos) << text;
}

TEST(Stragglers, EqualRanksHaveNone) {
  StragglerInput in;
  in.compute_s = {{0.1, 0.1}, {0.1, 0.1}};
  in.peer_group = {0, 0};
  EXPECT_TRUE(findStragglers(in).slow(1.1).empty());
}

TEST(Stragglers, TheCsvHasARowPerRankAndStep) {
  StragglerInput in;
  in.compute_s = {{0.001, 0.002}, {0.003}};
  EXPECT_EQ(heatmapCsv(in), "rank,step,compute_ms\n0,0,1.000\n0,1,2.000\n1,0,3.000\n");
}

}  // namespace
}  // namespace megascale::trainer
