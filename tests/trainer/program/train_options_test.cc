#include "trainer/program/train_options.h"

#include <gtest/gtest.h>

#include <fstream>

namespace megascale::trainer {
namespace {

TrainOptions parse(std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("megascale-train")};
  for (auto& a : args) argv.push_back(a.data());
  bool help = false;
  return parseTrainOptions(static_cast<int>(argv.size()), argv.data(), help);
}

TEST(TrainOptions, ConfigFileThenFlagsWhichWin) {
  const std::string path = ::testing::TempDir() + "/train.conf";
  std::ofstream(path) << "# a run\nlayers = 3\nd_model=64  # comment\nblock = serial\nlr = 5e-4\nsteps = 50\n";
  TrainOptions o = parse({"--config", path, "--layers", "4", "--optimizer=lamb"});
  EXPECT_EQ(o.model.layers, 4);
  EXPECT_EQ(o.model.d_model, 64);
  EXPECT_EQ(o.model.block, BlockKind::kSerial);
  EXPECT_EQ(o.optimizer.kind, OptimizerKind::kLamb);
  EXPECT_DOUBLE_EQ(o.lr, 5e-4);
  EXPECT_DOUBLE_EQ(o.min_lr, 5e-5);  // derived: lr / 10
  EXPECT_EQ(o.warmup, 5);            // derived: steps / 10
  // What describeOptions prints loads back as a config file.
  std::ofstream(path) << describeOptions(o);
  TrainOptions again = parse({"--config", path});
  EXPECT_EQ(describeOptions(again), describeOptions(o));
}

// The wire precisions follow --precision unless given: bf16 training moves bf16, fp32 training fp32.
TEST(TrainOptions, CommunicationPrecisionFollowsTheTrainingPrecision) {
  EXPECT_EQ(parse({}).pp_comm_precision, "fp32");
  EXPECT_EQ(parse({}).dp_comm_precision, "fp32");
  EXPECT_EQ(parse({"--precision", "bf16"}).pp_comm_precision, "bf16");
  EXPECT_EQ(parse({"--precision", "bf16"}).dp_comm_precision, "bf16");
  EXPECT_EQ(parse({"--precision", "bf16", "--pp-comm-precision", "fp32"}).pp_comm_precision, "fp32");
  EXPECT_EQ(parse({"--pp-comm-precision", "bf16"}).pp_comm_precision, "bf16");
}

TEST(TrainOptions, MistakesNameTheFlagOrLine) {
  auto message = [](std::vector<std::string> args) {
    try {
      parse(std::move(args));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({"--layrs", "3"}).find("unknown option 'layrs'"), std::string::npos);
  EXPECT_NE(message({"--layers", "three"}).find("--layers expects an integer"), std::string::npos);
  EXPECT_NE(message({"--block", "diagonal"}).find("--block must be"), std::string::npos);
  EXPECT_NE(message({"--steps"}).find("--steps needs a value"), std::string::npos);
  EXPECT_NE(message({"--precision", "fp8"}).find("--precision"), std::string::npos);
  EXPECT_NE(message({"--pp-traffic-class", "300"}).find("--pp-traffic-class must be a TOS byte"), std::string::npos);
  EXPECT_EQ(parse({"--pp-traffic-class", "184"}).pp_traffic_class, 184);
  EXPECT_EQ(parse({"--pp", "2", "--virtual-stages", "2", "--microbatch-group-size", "4"}).micro_batch_group, 4);
  EXPECT_NE(message({"--pp-comm-precision", "fp16"}).find("--pp-comm-precision must be fp32, bf16 or auto (got 'fp16')"),
            std::string::npos);
  EXPECT_NE(message({"--peak-gflops", "-1"}).find("--peak-gflops must be >= 0"), std::string::npos);
  EXPECT_DOUBLE_EQ(parse({"--peak-gflops", "989e3"}).peak_gflops, 989e3);
  EXPECT_NE(message({"--dp-comm-precision", "int8"}).find("--dp-comm-precision must be"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/bad.conf";
  std::ofstream(path) << "layers = 2\nthis line has no equals sign\n";
  EXPECT_NE(message({"--config", path}).find("bad.conf:2"), std::string::npos);
}

}  // namespace
}  // namespace megascale::trainer
