// The self-checks' verdicts: a correct GEMM passes exactly, outliers are those below a fraction of the median.
#include "launcher/self_checks.h"

#include <gtest/gtest.h>

namespace megascale::launcher {
namespace {

TEST(SelfChecks, ACorrectGemmPassesWithItsRate) {
  const CheckResult r = checkGemm(64, 0.01);
  EXPECT_TRUE(r.pass) << r.detail;
  EXPECT_GT(r.figure, 0);
  EXPECT_NE(r.detail.find("exact on 64^3"), std::string::npos) << r.detail;
}

TEST(SelfChecks, RanksMuchSlowerThanTheMedianAreFlagged) {
  EXPECT_EQ(slowerThanPeers({100, 98, 30, 105}, 0.5), std::vector<size_t>{2});
  EXPECT_TRUE(slowerThanPeers({100, 98, 60, 105}, 0.5).empty());
  EXPECT_EQ(slowerThanPeers({10, 100, 100}, 0.5), std::vector<size_t>{0});
  EXPECT_TRUE(slowerThanPeers({5}, 0.5).empty());  // alone: no peers to compare with
  EXPECT_TRUE(slowerThanPeers({}, 0.5).empty());
}

}  // namespace
}  // namespace megascale::launcher
