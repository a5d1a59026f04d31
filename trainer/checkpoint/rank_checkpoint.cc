#include "trainer/checkpoint/rank_checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
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

namespace {

std::string slotPath(const std::string& dir, int rank, int slot) {
  return rankCheckpointDir(dir, rank) + "/slot_" + std::to_string(slot) + ".ckpt";
}

// The step an intact slot holds, or -1.
int64_t slotStep(const std::string& path) {
  try {
    const SectionFile file(path, kRankMagic, kVersion, "megascale rank checkpoint");
    return file.value<int64_t>("step");
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

RankCheckpointWriter::RankCheckpointWriter(std::string dir, int rank) : dir_(std::move(dir)), rank_(rank) {}

void RankCheckpointWriter::write(const RankCheckpoint& c) {
  if (next_slot_ < 0) {
    const std::string own = rankCheckpointDir(dir_, rank_);
    std::error_code ec;
    std::filesystem::create_directories(own, ec);
    if (ec) throw std::runtime_error("cannot create checkpoint directory " + own + ": " + ec.message());
    next_slot_ = slotStep(slotPath(dir_, rank_, 0)) <= slotStep(slotPath(dir_, rank_, 1)) ? 0 : 1;
  }
  SectionWriter out;
  addCheckpointHeader(out, c.shape, c.state, c.optimizer_steps);
  out.addViews("shards", c.shard_pieces);
  out.overwrite(slotPath(dir_, rank_, next_slot_), kRankMagic, kVersion);
  next_slot_ = 1 - next_slot_;
}

std::vector<int64_t> rankCheckpointSteps(const std::string& dir, int rank) {
  std::vector<int64_t> steps;
  for (int slot : {0, 1}) {
    const int64_t step = slotStep(slotPath(dir, rank, slot));
    if (step >= 0) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

RankCheckpoint readRankCheckpoint(const std::string& dir, int rank, int64_t step, const std::string& expected_shape) {
  int slot = 0;
  while (slot < 2 && slotStep(slotPath(dir, rank, slot)) != step) ++slot;
  if (slot == 2) {
    throw std::runtime_error("no intact checkpoint of step " + std::to_string(step) + " in " +
                             rankCheckpointDir(dir, rank));
  }
  const SectionFile file(slotPath(dir, rank, slot), kRankMagic, kVersion, "megascale rank checkpoint");
  checkShape(file, expected_shape);
  RankCheckpoint c;
  c.shape = expected_shape;
  c.state = readTrainingState(file);
  c.optimizer_steps = file.value<int64_t>("optimizer_steps");
  const std::string_view shards = file.section("shards");
  if (shards.size() % sizeof(float) != 0) throw file.error("its shards section is not whole floats");
  c.shards.resize(shards.size() / sizeof(float));
  std::memcpy(c.shards.data(), shards.data(), shards.size());
  return c;
}

}  // namespace megascale::trainer
