// The driver's judgement of the link probes between hosts: slow links flagged, a host evicted only when its
// links failed both ways to two other hosts.
#include "launcher/link_check.h"

#include <gtest/gtest.h>

namespace megascale::launcher {
namespace {

// A ring 0 -> 1 -> ... -> n-1 -> 0, every link at `gbps`.
std::vector<LinkProbe> ring(int n, double gbps) {
  std::vector<LinkProbe> probes;
  for (int e = 0; e < n; ++e) probes.push_back({e, (e + 1) % n, true, gbps});
  return probes;
}

TEST(LinkCheck, EqualLinksPassWithTheirMedian) {
  const LinkVerdict v = judgeLinks(ring(4, 1.1), 0.5);
  EXPECT_DOUBLE_EQ(v.median_gbps, 1.1);
  EXPECT_TRUE(v.slow.empty());
  EXPECT_TRUE(v.failed.empty());
  EXPECT_TRUE(v.evict.empty());
}

TEST(LinkCheck, ALinkBelowHalfTheMedianIsFlaggedSlowAndNobodyEvicted) {
  auto probes = ring(4, 1.0);
  probes[2].gbps = 0.3;
  const LinkVerdict v = judgeLinks(probes, 0.5);
  ASSERT_EQ(v.slow.size(), 1u);
  EXPECT_EQ(v.slow[0].from, 2);
  EXPECT_EQ(v.slow[0].to, 3);
  EXPECT_TRUE(v.evict.empty());
}

TEST(LinkCheck, AHostWhoseLinksFailBothWaysInARingOfThreeOrMoreIsEvicted) {
  auto probes = ring(4, 1.0);
  probes[1].ok = probes[2].ok = false;  // 1 -> 2 and 2 -> 3: host 2's NIC
  const LinkVerdict v = judgeLinks(probes, 0.5);
  EXPECT_EQ(v.failed.size(), 2u);
  EXPECT_EQ(v.evict, std::vector<int>{2});
}

TEST(LinkCheck, OneFailedLinkEvictsNeitherEnd) {
  auto probes = ring(3, 1.0);
  probes[0].ok = false;
  const LinkVerdict v = judgeLinks(probes, 0.5);
  EXPECT_EQ(v.failed.size(), 1u);
  EXPECT_TRUE(v.evict.empty());
}

TEST(LinkCheck, BothLinksOfTwoHostsFailedIsAmbiguous) {
  auto probes = ring(2, 1.0);
  probes[0].ok = probes[1].ok = false;
  const LinkVerdict v = judgeLinks(probes, 0.5);
  EXPECT_EQ(v.failed.size(), 2u);
  EXPECT_TRUE(v.evict.empty()) << "either host's NIC could be the one";
}

TEST(LinkCheck, NoProbesNoVerdict) {
  const LinkVerdict v = judgeLinks({}, 0.5);
  EXPECT_EQ(v.median_gbps, 0);
  EXPECT_TRUE(v.evict.empty());
}

}  // namespace
}  // namespace megascale::launcher
