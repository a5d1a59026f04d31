// A rank's own checkpoints: written from views in place, read back whole; the newest kept; another shape, a
// truncated or corrupted file refused naming the file.
#include "trainer/checkpoint/rank_checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace megascale::trainer {
namespace {

std::string fresh(const char* name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

RankCheckpoint at(int64_t step, const std::vector<float>& a, const std::vector<float>& b) {
  RankCheckpoint c;
  c.shape = "model=x\nrank=3\n";
  c.state = TrainingState{step, step * 10, {1, 2, 3, static_cast<uint64_t>(step)}};
  c.optimizer_steps = step + 100;
  c.shard_pieces = {{reinterpret_cast<const char*>(a.data()), a.size() * sizeof(float)},
                    {reinterpret_cast<const char*>(b.data()), b.size() * sizeof(float)}};
  return c;
}

void expectRefused(const std::string& dir, int64_t step, const std::string& shape, const std::string& fragment) {
  try {
    readRankCheckpoint(dir, 3, step, shape);
    FAIL() << "expected " << fragment;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank_00003"), std::string::npos) << e.what();
  }
}

TEST(RankCheckpoint, RoundTripsItsPiecesAsOneStateAndKeepsTheNewest) {
  const std::string dir = fresh("rank_ckpt");
  const std::vector<float> a{1.5f, -2.0f, 3.25f}, b{4.0f, 5.0f};
  for (int64_t step = 1; step <= 5; ++step) writeRankCheckpoint(dir, 3, 2, at(step, a, b));
  EXPECT_EQ(rankCheckpointSteps(dir, 3), (std::vector<int64_t>{4, 5}));
  EXPECT_TRUE(rankCheckpointSteps(dir, 4).empty());
  const RankCheckpoint c = readRankCheckpoint(dir, 3, 5, "model=x\nrank=3\n");
  EXPECT_EQ(c.state.step, 5);
  EXPECT_EQ(c.state.data_position, 50);
  EXPECT_EQ(c.state.rng[3], 5u);
  EXPECT_EQ(c.optimizer_steps, 105);
  EXPECT_EQ(c.shards, (std::vector<float>{1.5f, -2.0f, 3.25f, 4.0f, 5.0f}));
}

TEST(RankCheckpoint, RefusesAnotherShapeATruncatedAndACorruptedFile) {
  const std::string dir = fresh("rank_ckpt_bad");
  const std::vector<float> a(1000, 0.5f), b(10, 1.0f);
  writeRankCheckpoint(dir, 3, 3, at(7, a, b));
  expectRefused(dir, 7, "model=x\nrank=4\n", "saved for another model");
  expectRefused(dir, 8, "model=x\nrank=3\n", "cannot open");
  const std::string path = dir + "/rank_00003/step_00000007.ckpt";
  const auto size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 100));
    f.put('\x7f');
  }
  expectRefused(dir, 7, "model=x\nrank=3\n", "checksum");
  std::filesystem::resize_file(path, size / 2);
  expectRefused(dir, 7, "model=x\nrank=3\n", "truncated");
}

}  // namespace
}  // namespace megascale::trainer
