#include "trainer/io/checksum.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace megascale::trainer {
namespace {

TEST(Crc32c, KnownValue) {
  // The CRC-32C check value of "123456789" (RFC 3720, iSCSI).
  EXPECT_EQ(crc32c(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32cPortable(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c(0, "", 0), 0u);
}

TEST(Crc32c, TheInstructionPathEqualsTheTablesOnEverySizeAlignmentAndSplit) {
  std::mt19937 random(5);
  std::vector<unsigned char> data(4099);
  for (auto& b : data) b = static_cast<unsigned char>(random());
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t size : {0ul, 1ul, 7ul, 8ul, 9ul, 63ul, 4000ul}) {
      EXPECT_EQ(crc32c(0, data.data() + offset, size), crc32cPortable(0, data.data() + offset, size)) << size;
    }
  }
  const uint32_t whole = crc32c(0, data.data(), data.size());
  EXPECT_EQ(crc32c(crc32c(0, data.data(), 1000), data.data() + 1000, data.size() - 1000), whole);
}

}  // namespace
}  // namespace megascale::trainer
