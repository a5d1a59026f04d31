#include "trainer/checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "trainer/model_configs.h"

namespace megascale::trainer {
namespace {

ModelConfig tiny() { return testing::modelConfig(1, 8, 2, 4, 16); }

std::string fresh(const char* name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

void expectRefused(const std::string& path, Gpt<float>& model, Optimizer<float>& opt, const std::string& fragment) {
  try {
    loadCheckpoint(path, model, opt);
    FAIL() << "expected " << fragment;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, RoundTripsWeightsMomentsAndState) {
  const std::string dir = fresh("ckpt_roundtrip");
  Gpt<float> model(tiny());
  model.initialize(3);
  Optimizer<float> opt({}, model.parameterTable());
  std::fill(model.gradients(), model.gradients() + model.parameterCount(), 0.5f);
  opt.step(model.parameters(), model.gradients(), 1e-2);
  TrainingState state{7, 123, {1, 2, 3, 4}};
  saveCheckpoint(dir + "/c.ckpt", state, model, opt);

  Gpt<float> other(tiny());
  Optimizer<float> other_opt({}, other.parameterTable());
  TrainingState loaded = loadCheckpoint(dir + "/c.ckpt", other, other_opt);
  EXPECT_EQ(loaded.step, 7);
  EXPECT_EQ(loaded.data_position, 123);
  EXPECT_EQ(loaded.rng, state.rng);
  EXPECT_EQ(other_opt.steps(), 1);
  EXPECT_TRUE(std::equal(model.parameters(), model.parameters() + model.parameterCount(), other.parameters()));
  EXPECT_EQ(other_opt.firstMoment(), opt.firstMoment());
  EXPECT_EQ(other_opt.secondMoment(), opt.secondMoment());
}

TEST(Checkpoint, TruncatedCorruptedOrForeignFilesAreRefused) {
  const std::string dir = fresh("ckpt_damaged");
  Gpt<float> model(tiny());
  Optimizer<float> opt({}, model.parameterTable());
  saveCheckpoint(dir + "/good.ckpt", {}, model, opt);
  std::ifstream in(dir + "/good.ckpt", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir + "/short.ckpt", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  expectRefused(dir + "/short.ckpt", model, opt, "truncated");
  std::ofstream(dir + "/tiny.ckpt", std::ios::binary) << bytes.substr(0, 10);
  expectRefused(dir + "/tiny.ckpt", model, opt, "truncated");
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  std::ofstream(dir + "/flip.ckpt", std::ios::binary) << flipped;
  expectRefused(dir + "/flip.ckpt", model, opt, "checksum");
  expectRefused(dir + "/none.ckpt", model, opt, "cannot open");

  ModelConfig wider = tiny();
  wider.d_model = 16;
  Gpt<float> other(wider);
  Optimizer<float> other_opt({}, other.parameterTable());
  expectRefused(dir + "/good.ckpt", other, other_opt, "d_model=8");
}

TEST(Checkpoint, DirectoryKeepsTheNewestAndPointsLatestAtIt) {
  const std::string dir = fresh("ckpt_dir");
  Gpt<float> model(tiny());
  Optimizer<float> opt({}, model.parameterTable());
  EXPECT_EQ(latestCheckpoint(dir), "");
  for (int64_t step : {10, 20, 30}) saveToDirectory(dir, 2, TrainingState{step, 0, {}}, model, opt);
  EXPECT_EQ(latestCheckpoint(dir), checkpointPath(dir, 30));
  EXPECT_FALSE(std::filesystem::exists(checkpointPath(dir, 10)));
  EXPECT_TRUE(std::filesystem::exists(checkpointPath(dir, 20)));
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().string().find(".tmp."), std::string::npos) << "temporary file left: " << entry.path();
  }
}

}  // namespace
}  // namespace megascale::trainer
