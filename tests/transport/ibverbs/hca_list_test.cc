// MEGASCALE_IB_HCA in NCCL_IB_HCA's syntax: prefixes, exact names, ports, exclusion, and bad entries refused.
#include "transport/ibverbs/hca_list.h"

#include <gtest/gtest.h>

#include "common/status.h"

namespace megascale::transport {
namespace {

TEST(HcaList, EmptyTakesEveryPort) {
  EXPECT_TRUE(HcaList::parse("").selects("mlx5_0", 1));
  EXPECT_TRUE(HcaList::parse("").selects("emroce3", 2));
}

TEST(HcaList, PrefixesUnlessExact) {
  const HcaList prefix = HcaList::parse("mlx5_1");
  EXPECT_TRUE(prefix.selects("mlx5_1", 1));
  EXPECT_TRUE(prefix.selects("mlx5_10", 1)) << "NCCL's prefix match";
  EXPECT_FALSE(prefix.selects("mlx5_2", 1));
  const HcaList exact = HcaList::parse("=mlx5_1");
  EXPECT_TRUE(exact.selects("mlx5_1", 1));
  EXPECT_FALSE(exact.selects("mlx5_10", 1));
}

TEST(HcaList, PortsAndSeveralEntries) {
  const HcaList list = HcaList::parse("mlx5_0:1,mlx5_1");
  EXPECT_TRUE(list.selects("mlx5_0", 1));
  EXPECT_FALSE(list.selects("mlx5_0", 2));
  EXPECT_TRUE(list.selects("mlx5_1", 2));
  EXPECT_FALSE(list.selects("mlx5_2", 1));
}

TEST(HcaList, ACaretLeavesTheListedOut) {
  const HcaList list = HcaList::parse("^=mlx5_3,mlx5_4:2");
  EXPECT_FALSE(list.selects("mlx5_3", 1));
  EXPECT_TRUE(list.selects("mlx5_30", 1)) << "exact names";
  EXPECT_TRUE(list.selects("mlx5_4", 1));
  EXPECT_FALSE(list.selects("mlx5_4", 2));
}

TEST(HcaList, BadEntriesAreRefusedByName) {
  for (const char* text : {"mlx5_0:0", "mlx5_0:x", "mlx5_0:", ":1", "mlx5_0:256"}) {
    try {
      (void)HcaList::parse(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace megascale::transport
