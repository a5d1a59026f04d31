#include "trainer/checkpoint/rank_checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "trainer/checkpoint/sharded_checkpoint.h"
#include "trainer/io/section_file.h"

namespace megascale::trainer {

namespace {

constexpr char kRankMagic[8] = {'M', 'S', 'R', 'A', 'N', 'K', '0', '1'};
constexpr uint32_t kVersion = 1;

}  // namespace

std::string rankCheckpointDir(const std::string& dir, int rank) {
  char name[32];
  std::snprintf(name, sizeof(name), "/rank_%05d", rank);
  return dir + name;
}

void writeRankCheckpoint(const std::string& dir, int rank, int keep, const RankCheckpoint& c) {
  const std::string own = rankCheckpointDir(dir, rank);
  std::error_code ec;
  std::filesystem::create_directories(own, ec);
  if (ec) throw std::runtime_error("cannot create checkpoint directory " + own + ": " + ec.message());
  SectionWriter out;
  out.add("shape", c.shape.data(), c.shape.size());
  out.addValue("step", c.state.step);
  out.addValue("data_position", c.state.data_position);
  out.add("rng", c.state.rng.data(), sizeof(c.state.rng));
  out.addValue("optimizer_steps", c.optimizer_steps);
  out.addViews("shards", c.shard_pieces);
  const std::string path = checkpointPath(own, c.state.step);
  out.write(path, kRankMagic, kVersion);
  publishCheckpoint(own, std::filesystem::path(path).filename().string(), keep);
}

std::vector<int64_t> rankCheckpointSteps(const std::string& dir, int rank) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(rankCheckpointDir(dir, rank), ec)) {
    const std::string n = entry.path().filename().string();
    long long step = -1;
    char tail[8] = {};
    if (std::sscanf(n.c_str(), "step_%8lld.%5s", &step, tail) == 2 && std::string(tail) == "ckpt" && step >= 0) {
      steps.push_back(step);
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

RankCheckpoint readRankCheckpoint(const std::string& dir, int rank, int64_t step, const std::string& expected_shape) {
  const SectionFile file(checkpointPath(rankCheckpointDir(dir, rank), step), kRankMagic, kVersion,
                         "megascale rank checkpoint");
  checkShape(file, expected_shape);
  RankCheckpoint c;
  c.shape = expected_shape;
  c.state = readTrainingState(file);
  c.optimizer_steps = file.value<int64_t>("optimizer_steps");
  const std::string_view shards = file.section("shards");
  if (shards.size() % sizeof(float) != 0) throw file.error("its shards section is not whole floats");
  c.shards.resize(shards.size() / sizeof(float));
  std::memcpy(c.shards.data(), shards.data(), shards.size());
  if (c.state.step != step) throw file.error("it holds step " + std::to_string(c.state.step) + ", not " + std::to_string(step));
  return c;
}

}  // namespace megascale::trainer
