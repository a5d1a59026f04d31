#include "trainer/checkpoint/rank_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/checkpoint_layout.h"
#include "trainer/checkpoint/sharded_checkpoint.h"
#include "trainer/io/section_file.h"

namespace megascale::trainer {

namespace {

constexpr char kRankMagic[8] = {'M', 'S', 'R', 'A', 'N', 'K', '0', '1'};
constexpr uint32_t kVersion = 1;

}  // namespace

std::string rankCheckpointDir(const std::string& dir, int rank) { return dir + "/" + rankCheckpointDirName(rank); }

namespace {

std::string slotPath(const std::string& dir, int rank, int slot) {
  return rankCheckpointDir(dir, rank) + "/slot_" + std::to_string(slot) + ".ckpt";
}

// The slot's file when it is intact (whole, checksums right), else nothing.
std::unique_ptr<SectionFile> intactSlot(const std::string& path) {
  try {
    auto file = std::make_unique<SectionFile>(path, kRankMagic, kVersion, "megascale rank checkpoint");
    file->value<int64_t>("step");
    return file;
  } catch (const std::exception&) {
    return nullptr;
  }
}

// The step an intact slot holds, or -1.
int64_t slotStep(const std::string& path) {
  const auto file = intactSlot(path);
  return file ? file->value<int64_t>("step") : -1;
}

// Every slot file the rank has, by slot number (slots beyond the writer's count stay readable).
std::vector<int> existingSlots(const std::string& dir, int rank) {
  std::vector<int> slots;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(rankCheckpointDir(dir, rank), ec)) {
    const std::string name = entry.path().filename().string();
    const std::string digits = name.size() > 10 ? name.substr(5, name.size() - 10) : "";
    if (name.starts_with("slot_") && name.ends_with(".ckpt") && !digits.empty() && digits.size() < 4 &&
        std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      slots.push_back(std::stoi(digits));
    }
  }
  std::sort(slots.begin(), slots.end());
  return slots;
}

}  // namespace

RankCheckpointWriter::RankCheckpointWriter(std::string dir, int rank, int slots)
    : dir_(std::move(dir)), rank_(rank), slots_(slots) {
  if (slots_ < 2) throw std::invalid_argument("a rank checkpoint needs at least 2 slots, not " + std::to_string(slots));
}

void RankCheckpointWriter::write(const RankCheckpoint& c) {
  if (next_slot_ < 0) {
    const std::string own = rankCheckpointDir(dir_, rank_);
    std::error_code ec;
    std::filesystem::create_directories(own, ec);
    if (ec) throw std::runtime_error("cannot create checkpoint directory " + own + ": " + ec.message());
    // The slot with the oldest step (or none) goes first; then in turn, so the slots stay in step order.
    next_slot_ = 0;
    int64_t oldest = slotStep(slotPath(dir_, rank_, 0));
    for (int slot = 1; slot < slots_; ++slot) {
      const int64_t step = slotStep(slotPath(dir_, rank_, slot));
      if (step < oldest) {
        oldest = step;
        next_slot_ = slot;
      }
    }
  }
  SectionWriter out;
  addCheckpointHeader(out, c.shape, c.state, c.optimizer_steps);
  out.addViews("shards", c.shard_pieces);
  out.overwrite(slotPath(dir_, rank_, next_slot_), kRankMagic, kVersion);
  next_slot_ = (next_slot_ + 1) % slots_;
}

std::vector<int64_t> rankCheckpointSteps(const std::string& dir, int rank) {
  std::vector<int64_t> steps;
  for (int slot : existingSlots(dir, rank)) {
    const int64_t step = slotStep(slotPath(dir, rank, slot));
    if (step >= 0) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

RankCheckpoint readRankCheckpoint(const std::string& dir, int rank, int64_t step, const std::string& expected_shape) {
  std::unique_ptr<SectionFile> found;  // each slot read once
  for (int slot : existingSlots(dir, rank)) {
    found = intactSlot(slotPath(dir, rank, slot));
    if (found && found->value<int64_t>("step") == step) break;
    found.reset();
  }
  if (!found) {
    throw std::runtime_error("no intact checkpoint of step " + std::to_string(step) + " in " +
                             rankCheckpointDir(dir, rank));
  }
  const SectionFile& file = *found;
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
