#include "trainer/data/token_shard.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace megascale::trainer {
namespace {

std::string path(const char* name) { return ::testing::TempDir() + "/" + name; }

std::string readAll(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void expectRefused(const std::string& p, const std::string& fragment) {
  try {
    readTokenShard(p);
    FAIL() << "expected " << fragment;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(TokenShard, RoundTripsNarrowAndWideTokens) {
  for (int32_t vocab : {300, 70000}) {
    std::vector<int32_t> tokens;
    for (int32_t i = 0; i < 1000; ++i) tokens.push_back((i * 7919) % vocab);
    writeTokenShard(path("s.bin"), tokens, vocab);
    EXPECT_EQ(std::filesystem::file_size(path("s.bin")), 64u + tokens.size() * (vocab <= 65536 ? 2 : 4));
    TokenShard shard = readTokenShard(path("s.bin"));
    EXPECT_EQ(shard.vocab, vocab);
    EXPECT_EQ(shard.tokens, tokens);
  }
}

TEST(TokenShard, DamagedFilesAreRefused) {
  writeTokenShard(path("d.bin"), {1, 2, 3, 4, 5}, 10);
  const std::string good = readAll(path("d.bin"));
  std::ofstream(path("t.bin"), std::ios::binary) << good.substr(0, good.size() - 3);
  expectRefused(path("t.bin"), "truncated");
  std::string flipped = good;
  flipped[good.size() - 2] ^= 1;
  std::ofstream(path("f.bin"), std::ios::binary) << flipped;
  expectRefused(path("f.bin"), "payload checksum");
  std::string header = good;
  header[30] ^= 1;
  std::ofstream(path("h.bin"), std::ios::binary) << header;
  expectRefused(path("h.bin"), "header checksum");
  std::ofstream(path("m.bin"), std::ios::binary) << std::string(100, 'x');
  expectRefused(path("m.bin"), "magic");
  expectRefused(path("absent.bin"), "cannot open");
  EXPECT_THROW(writeTokenShard(path("x.bin"), {3, 10}, 10), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::trainer
