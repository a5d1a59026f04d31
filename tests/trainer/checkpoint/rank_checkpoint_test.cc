// A rank's own checkpoints: written from views in place, read back whole; the newest kept; another shape, a
// torn or truncated slot refused naming the file.
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
  RankCheckpointWriter writer(dir, 3);
  for (int64_t step = 1; step <= 5; ++step) writer.write(at(step, a, b));
  EXPECT_EQ(rankCheckpointSteps(dir, 3), (std::vector<int64_t>{4, 5}));
  // A writer after a restart overwrites the older slot first.
  RankCheckpointWriter again(dir, 3);
  again.write(at(6, a, b));
  EXPECT_EQ(rankCheckpointSteps(dir, 3), (std::vector<int64_t>{5, 6}));
  EXPECT_TRUE(rankCheckpointSteps(dir, 4).empty());
  const RankCheckpoint c = readRankCheckpoint(dir, 3, 5, "model=x\nrank=3\n");
  EXPECT_EQ(c.state.step, 5);
  EXPECT_EQ(c.state.data_position, 50);
  EXPECT_EQ(c.state.rng[3], 5u);
  EXPECT_EQ(c.optimizer_steps, 105);
  EXPECT_EQ(readRankCheckpoint(dir, 3, 6, "model=x\nrank=3\n").state.step, 6);
  EXPECT_EQ(c.shards, (std::vector<float>{1.5f, -2.0f, 3.25f, 4.0f, 5.0f}));
}

TEST(RankCheckpoint, RefusesAnotherShapeAndATornSlotKeepingTheOther) {
  const std::string dir = fresh("rank_ckpt_bad");
  const std::vector<float> a(1000, 0.5f), b(10, 1.0f);
  RankCheckpointWriter writer(dir, 3);
  writer.write(at(7, a, b));
  writer.write(at(8, a, b));
  expectRefused(dir, 7, "model=x\nrank=4\n", "saved for another model");
  expectRefused(dir, 9, "model=x\nrank=3\n", "no intact checkpoint of step 9");
  // Step 8's slot torn (a rank killed while writing it: the end stamp of a newer write), then cut short: step 7
  // stays readable. The stamp's byte is inverted, never set: generations start at random, so any fixed value is
  // already there once in 256 runs (f16 met it).
  const std::string path = dir + "/rank_00003/slot_1.ckpt";
  const auto size = std::filesystem::file_size(path);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size - 8));
    const int stamp_byte = f.get();
    ASSERT_NE(stamp_byte, EOF);
    f.seekp(static_cast<std::streamoff>(size - 8));
    f.put(static_cast<char>(stamp_byte ^ 0xff));
  }
  EXPECT_EQ(rankCheckpointSteps(dir, 3), std::vector<int64_t>{7});
  expectRefused(dir, 8, "model=x\nrank=3\n", "no intact checkpoint of step 8");
  std::filesystem::resize_file(path, size / 2);
  EXPECT_EQ(rankCheckpointSteps(dir, 3), std::vector<int64_t>{7});
  EXPECT_EQ(readRankCheckpoint(dir, 3, 7, "model=x\nrank=3\n").shards.size(), 1010u);
}

// Four slots keep the four newest steps in turn, also across a new writer (a restart), which starts at the
// oldest; files that are not slots are ignored.
TEST(RankCheckpoint, MoreSlotsKeepMoreStepsInTurn) {
  const std::string dir = fresh("rank_ckpt_four");
  const std::vector<float> a(8, 0.25f), b(2, 2.0f);
  RankCheckpointWriter writer(dir, 3, 4);
  for (int64_t step = 1; step <= 6; ++step) writer.write(at(step, a, b));
  EXPECT_EQ(rankCheckpointSteps(dir, 3), (std::vector<int64_t>{3, 4, 5, 6}));
  std::ofstream(dir + "/rank_00003/slot_0.ckpt.part") << "not a slot";
  std::ofstream(dir + "/rank_00003/slot_x.ckpt") << "not a slot";
  RankCheckpointWriter again(dir, 3, 4);
  again.write(at(7, a, b));
  EXPECT_EQ(rankCheckpointSteps(dir, 3), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(readRankCheckpoint(dir, 3, 4, "model=x\nrank=3\n").state.step, 4);
  EXPECT_THROW(RankCheckpointWriter(dir, 3, 1), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::trainer
