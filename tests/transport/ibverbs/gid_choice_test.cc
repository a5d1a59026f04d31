// The GID a port's queue pairs use: RoCE v2 and IPv4 by default even where v1 comes first (as a ConnectX lists
// them), the asked version and family, an explicit index, InfiniBand's port GID, and an error that shows the
// table when nothing fits.
#include "transport/ibverbs/gid_choice.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

namespace megascale::transport {
namespace {

GidEntry entry(int index, GidType type, const char* address) {
  GidEntry e;
  e.index = index;
  e.type = type;
  in6_addr a{};
  if (inet_pton(AF_INET6, address, &a) != 1) ADD_FAILURE() << address;
  std::copy(a.s6_addr, a.s6_addr + 16, e.raw.begin());
  return e;
}

// A ConnectX port with one IPv4 and one IPv6 address: v1 and v2 of the link-local address, then of each
// address, v1 first; slot 6 unused.
std::vector<GidEntry> connectX() {
  return {entry(0, GidType::kRoceV1, "fe80::1"),          entry(1, GidType::kRoceV2, "fe80::1"),
          entry(2, GidType::kRoceV1, "::ffff:10.0.0.7"),  entry(3, GidType::kRoceV2, "::ffff:10.0.0.7"),
          entry(4, GidType::kRoceV1, "2001:db8::7"),      entry(5, GidType::kRoceV2, "2001:db8::7"),
          entry(6, GidType::kRoceV2, "::")};
}

int choose(const std::vector<GidEntry>& table, GidPreference want, bool infiniband = false) {
  GidEntry chosen;
  const Status s = chooseGid(table, want, infiniband, "mlx5_0", &chosen);
  EXPECT_TRUE(s.isOk()) << s.message();
  return s.isOk() ? chosen.index : -1;
}

TEST(GidChoice, RoceV2AndIpv4ByDefaultWhereV1ComesFirst) {
  EXPECT_EQ(choose(connectX(), {}), 3);
  GidEntry chosen;
  ASSERT_TRUE(chooseGid(connectX(), {}, false, "mlx5_0", &chosen).isOk());
  EXPECT_EQ(chosen.address(), "::ffff:10.0.0.7");
  EXPECT_STREQ(gidTypeName(chosen.type), "RoCE v2");
}

TEST(GidChoice, TheAskedVersionFamilyAndIndexAreHonoured) {
  EXPECT_EQ(choose(connectX(), {-1, 1, false}), 2);
  EXPECT_EQ(choose(connectX(), {-1, 2, true}), 5) << "a routable IPv6 address before the link-local one";
  EXPECT_EQ(choose(connectX(), {-1, 1, true}), 4);
  EXPECT_EQ(choose({entry(0, GidType::kRoceV2, "fe80::1")}, {-1, 2, true}), 0) << "link-local when it is all there is";
  EXPECT_EQ(choose(connectX(), {0, 2, false}), 0) << "an explicit index wins, whatever its type";
}

TEST(GidChoice, InfiniBandUsesThePortGid) {
  EXPECT_EQ(choose({entry(0, GidType::kInfiniBand, "fe80::2:c903:a:b")}, {}, true), 0);
}

TEST(GidChoice, NothingFittingIsAnErrorThatShowsTheTable) {
  GidEntry chosen;
  Status s = chooseGid({entry(0, GidType::kRoceV1, "::ffff:10.0.0.7")}, {}, false, "mlx5_3", &chosen);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("mlx5_3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("no RoCE v2 GID with an IPv4 address"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("0 RoCE v1 ::ffff:10.0.0.7"), std::string::npos) << s.message();
  s = chooseGid(connectX(), {6, 2, false}, false, "mlx5_0", &chosen);
  EXPECT_NE(s.message().find("no GID at index 6"), std::string::npos) << s.message();
  s = chooseGid(connectX(), {42, 2, false}, false, "mlx5_0", &chosen);
  EXPECT_NE(s.message().find("no GID at index 42"), std::string::npos) << s.message();
}

TEST(GidChoice, InfiniBandRoutesGloballyOnlyWhenAskedOrToAnotherSubnet) {
  const GidEntry here = entry(0, GidType::kInfiniBand, "fe80::2:c903:a:b");
  const GidEntry same_subnet = entry(0, GidType::kInfiniBand, "fe80::2:c903:a:c");
  const GidEntry other_subnet = entry(0, GidType::kInfiniBand, "fec0:0:0:1:2:c903:a:c");
  EXPECT_FALSE(routeGlobally(true, false, here.raw.data(), same_subnet.raw.data())) << "a LID reaches it";
  EXPECT_TRUE(routeGlobally(true, false, here.raw.data(), other_subnet.raw.data())) << "only a router reaches it";
  EXPECT_TRUE(routeGlobally(true, true, here.raw.data(), same_subnet.raw.data())) << "MEGASCALE_IB_ROUTE_GLOBAL";
  EXPECT_TRUE(routeGlobally(false, false, here.raw.data(), same_subnet.raw.data())) << "RoCE has no LIDs";
}

TEST(GidChoice, SysfsTypeTexts) {
  GidType t;
  ASSERT_TRUE(parseGidTypeText("RoCE v2\n", &t));
  EXPECT_EQ(t, GidType::kRoceV2);
  ASSERT_TRUE(parseGidTypeText("IB/RoCE v1\n", &t));
  EXPECT_EQ(t, GidType::kRoceV1);
  EXPECT_FALSE(parseGidTypeText("", &t));
}

}  // namespace
}  // namespace megascale::transport
