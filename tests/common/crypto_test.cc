#include "common/crypto.h"

#include <gtest/gtest.h>

#include <string>

#include "common/status.h"

namespace megascale {
namespace {

std::string hex(const Digest& d) { return toHex(d.data(), d.size()); }

TEST(Sha256, MatchesFips180Vectors) {
  EXPECT_EQ(hex(sha256("abc", 3)), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256("", 0)), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(hex(sha256(two_blocks.data(), two_blocks.size())),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, LargeInputMatchesKnownDigest) {  // one million 'a' (FIPS 180-2, appendix B.3)
  std::string text(1000000, 'a');
  EXPECT_EQ(hex(sha256(text.data(), text.size())), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(HmacSha256, MatchesRfc4231Vectors) {
  std::string key1(20, '\x0b');
  EXPECT_EQ(hex(hmacSha256(key1, "Hi There", 8)), "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  std::string msg2 = "what do ya want for nothing?";
  EXPECT_EQ(hex(hmacSha256("Jefe", msg2.data(), msg2.size())),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  std::string key6(131, '\xaa');  // longer than a block: hashed first
  std::string msg6 = "Test Using Larger Than Block-Size Key - Hash Key First";
  EXPECT_EQ(hex(hmacSha256(key6, msg6.data(), msg6.size())),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(Hex, RoundTripsAndRejectsGarbage) {
  std::string out;
  ASSERT_TRUE(fromHex("00ff10Ab", &out));
  EXPECT_EQ(out, std::string("\x00\xff\x10\xab", 4));
  EXPECT_EQ(toHex(out.data(), out.size()), "00ff10ab");
  EXPECT_FALSE(fromHex("abc", &out));
  EXPECT_FALSE(fromHex("zz", &out));
}

TEST(HmacSha256, EmptyKeyIsAKeyOfItsOwn) {  // RFC 2104: an empty key is zero-padded like any other
  EXPECT_EQ(hex(hmacSha256("", "", 0)), "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(JobSecret, ParsesHexOfAtLeast16BytesAndNamesTheSource) {
  EXPECT_EQ(jobSecretFromHex("000102030405060708090a0b0c0d0e0f", "x"),
            std::string("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f", 16));
  for (const char* bad : {"", "00", "000102030405060708090a0b0c0d0e", "zz0102030405060708090a0b0c0d0e0f0"}) {
    try {
      jobSecretFromHex(bad, "MEGASCALE_JOB_SECRET");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("MEGASCALE_JOB_SECRET: the job secret must be at least 16 bytes of hex"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(RandomBytes, DiffersBetweenCalls) {
  uint8_t a[32], b[32];
  randomBytes(a, sizeof(a));
  randomBytes(b, sizeof(b));
  EXPECT_NE(toHex(a, 32), toHex(b, 32));
}

}  // namespace
}  // namespace megascale
