#include "trainer/checkpoint/rank_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>

#include "common/checkpoint_layout.h"
#include "trainer/checkpoint/rank_slot_file.h"

namespace megascale::trainer {

std::string rankCheckpointDir(const std::string& dir, int rank) { return dir + "/" + rankCheckpointDirName(rank); }

namespace {

std::string slotPath(const std::string& dir, int rank, int slot) {
  return rankCheckpointDir(dir, rank) + "/slot_" + std::to_string(slot) + ".ckpt";
}

// The step an intact slot holds, or -1.
int64_t slotStep(const std::string& path) {
  const RankSlotRead slot = readRankSlot(path);
  return slot.intact ? slot.header.state.step : -1;
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
  std::random_device random;  // a fresh start per writer: no stamp an earlier writer left can match its own
  generation_ = uint64_t{random()} << 32 | random();
}

RankCheckpointWriter::~RankCheckpointWriter() = default;

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
    mapped_.resize(static_cast<size_t>(slots_));
  }
  uint64_t state_bytes = 0;
  for (const std::string_view piece : c.shard_pieces) state_bytes += piece.size();
  std::unique_ptr<RankSlotWriter>& slot = mapped_[static_cast<size_t>(next_slot_)];
  if (!slot || !slot->fits(c.shape.size(), state_bytes)) {
    slot.reset();
    slot = std::make_unique<RankSlotWriter>(slotPath(dir_, rank_, next_slot_), c.shape.size(), state_bytes);
  }
  if (++generation_ == 0) ++generation_;
  slot->write(generation_, RankSlotHeader{c.shape, c.state, c.optimizer_steps, state_bytes}, c.shard_pieces);
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
  std::vector<std::string> problems;
  for (int slot : existingSlots(dir, rank)) {
    const std::string path = slotPath(dir, rank, slot);
    if (slotStep(path) != step) continue;
    RankCheckpoint c;
    const RankSlotRead read = readRankSlot(path, &c.shards);
    if (!read.intact) {  // torn since the first look: another process writes this rank's slots
      problems.push_back(read.problem);
      continue;
    }
    if (const std::string mismatch = shapeMismatch(read.header.shape, expected_shape); !mismatch.empty()) {
      throw std::runtime_error("checkpoint slot " + path + ": " + mismatch);
    }
    c.shape = expected_shape;
    c.state = read.header.state;
    c.optimizer_steps = read.header.optimizer_steps;
    return c;
  }
  std::string why;
  for (const std::string& p : problems) why += "; " + p;
  throw std::runtime_error("no intact checkpoint of step " + std::to_string(step) + " in " +
                           rankCheckpointDir(dir, rank) + why);
}

}  // namespace megascale::trainer
