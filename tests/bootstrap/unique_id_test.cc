#include "bootstrap/unique_id.h"

#include <gtest/gtest.h>

#include "common/status.h"

namespace megascale {
namespace {

TEST(UniqueId, RoundTripsThroughText) {
  UniqueId id = UniqueId::generate("tcp://10.0.0.1:29500");
  UniqueId back = UniqueId::parse(id.serialize());
  EXPECT_EQ(back.store_url, id.store_url);
  EXPECT_EQ(back.job_id, id.job_id);
  EXPECT_EQ(back.secret, id.secret);
  EXPECT_EQ(id.secret.size(), 32u);
  EXPECT_LT(id.serialize().size(), kUniqueIdBytes);
}

TEST(UniqueId, FreshIdsDiffer) {
  EXPECT_NE(UniqueId::generate("tcp://h:1").secret, UniqueId::generate("tcp://h:1").secret);
}

TEST(UniqueId, RejectsMalformedText) {
  EXPECT_THROW(UniqueId::parse(""), Error);
  EXPECT_THROW(UniqueId::parse("msc1;tcp://h:1;job"), Error);
  EXPECT_THROW(UniqueId::parse("msc1;tcp://h:1;job;zz"), Error);
  EXPECT_THROW(UniqueId::parse("msc1;tcp://h:1;job;0011"), Error);  // secret too short
  EXPECT_THROW(UniqueId::parse("msc1;http://h:1;job;00112233445566778899aabbccddeeff"), Error);
  EXPECT_THROW(UniqueId::parse("msc1;tcp://h:0;job;00112233445566778899aabbccddeeff"), Error);
  EXPECT_NO_THROW(UniqueId::parse("msc1;redis://h:6379;job;00112233445566778899aabbccddeeff"));
}

}  // namespace
}  // namespace megascale
