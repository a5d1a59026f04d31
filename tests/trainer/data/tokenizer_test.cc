#include "trainer/data/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace megascale::trainer {
namespace {

std::string corpus() {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the hacker wrote the kernel, and the kernel ran. 1024 bytes\n";
  return text;
}

TEST(PreTokenize, WordsKeepTheirLeadingSpace) {
  auto pieces = preTokenize("Hello world  foo,bar 42\n\nend ");
  std::vector<std::string> got(pieces.begin(), pieces.end());
  EXPECT_EQ(got, (std::vector<std::string>{"Hello", " world", " ", " foo", ",", "bar", " 42", "\n\n", "end", " "}));
}

TEST(Tokenizer, BytesRoundTripAnyInput) {
  Tokenizer bytes;
  const std::string text("caf\xc3\xa9 \0 \xff", 10);
  auto ids = bytes.encode(text);
  EXPECT_EQ(ids.size(), text.size());
  EXPECT_EQ(bytes.decode(ids), text);
  EXPECT_EQ(bytes.vocabSize(), 256);
}

TEST(Tokenizer, BpeLearnsMergesThatShortenTheTextAndRoundTrip) {
  Tokenizer bpe = Tokenizer::trainBpe(corpus(), 280);
  EXPECT_EQ(bpe.vocabSize(), 280);
  auto ids = bpe.encode(corpus());
  EXPECT_LT(ids.size() * 2, corpus().size());  // 2.9x fewer tokens than bytes here
  EXPECT_EQ(bpe.decode(ids), corpus());
  const std::string unseen = "zebra \xe2\x9c\x93 kernels hacked";  // bytes fall back where no merge applies
  EXPECT_EQ(bpe.decode(bpe.encode(unseen)), unseen);
  EXPECT_EQ(Tokenizer::trainBpe(corpus(), 280).encode(unseen), bpe.encode(unseen));  // deterministic
}

TEST(Tokenizer, StopsWhenNothingRepeats) {
  EXPECT_LT(Tokenizer::trainBpe("abcdefg", 1000).vocabSize(), 1000);
  EXPECT_THROW(Tokenizer::trainBpe("x", 100), std::invalid_argument);
}

TEST(Tokenizer, SaveLoadGivesTheSameEncoding) {
  Tokenizer bpe = Tokenizer::trainBpe(corpus(), 280);
  const std::string path = ::testing::TempDir() + "/tok.bpe";
  bpe.save(path);
  Tokenizer loaded = Tokenizer::load(path);
  EXPECT_EQ(loaded.vocabSize(), 280);
  EXPECT_EQ(loaded.encode(corpus()), bpe.encode(corpus()));
  std::remove(path.c_str());
}

TEST(Tokenizer, MalformedFilesAreRefusedWithTheLine) {
  const std::string path = ::testing::TempDir() + "/bad.bpe";
  std::ofstream(path) << "megascale-bpe 1\n104 101\n999 1\n";
  try {
    Tokenizer::load(path);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(":3:"), std::string::npos) << e.what();
  }
  std::ofstream(path) << "something else\n";
  EXPECT_THROW(Tokenizer::load(path), std::runtime_error);
  EXPECT_THROW(Tokenizer::load(path + ".missing"), std::runtime_error);
  EXPECT_THROW(Tokenizer().decode({256}), std::out_of_range);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace megascale::trainer
