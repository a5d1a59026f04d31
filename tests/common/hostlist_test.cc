#include "common/hostlist.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace megascale {
namespace {

using Names = std::vector<std::string>;

TEST(Hostlist, ExpandsRangesListsAndPlainNames) {
  EXPECT_EQ(expandHostlist("node[1-3]"), (Names{"node1", "node2", "node3"}));
  EXPECT_EQ(expandHostlist("node[08-10,15],gpu5"), (Names{"node08", "node09", "node10", "node15", "gpu5"}));
  EXPECT_EQ(expandHostlist("a,b"), (Names{"a", "b"}));
  EXPECT_EQ(expandHostlist("tor[0]x"), (Names{"tor0x"}));
  EXPECT_TRUE(expandHostlist("").empty());
}

TEST(Hostlist, SeveralBracketsVaryTheFirstSlowest) {
  EXPECT_EQ(expandHostlist("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
}

TEST(Hostlist, RefusesMalformedExpressionsNamingThem) {
  for (const char* bad : {"node[1-3", "node1-3]", "a,,b", "node[3-1]", "node[x]", "node[[1]]", "node[1-]", "n[0-2000000]"}) {
    try {
      expandHostlist(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace megascale
