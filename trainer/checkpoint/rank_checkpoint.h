// Checkpoints of one rank's own state, for a restart of the same job on the same layout: each rank writes the
// optimizer shards it holds (ZeRO: its master weights and moments; the parameters follow from them) with no
// message to any other rank, so a checkpoint every step costs a copy into host memory. Unlike the sharded
// checkpoints (sharded_checkpoint.h) they load only into the layout that wrote them; the shape they record
// (model, optimizer, layout, rank, size) says so, and a mismatch is refused naming the file.
//
// Layout: dir/rank_RRRRR/slot_0.ckpt, slot_1.ckpt, ... (MEGASCALE_MEMORY_CHECKPOINT_SLOTS, default 2), files the
// writer keeps mapped and rewrites in place in turn (rank_slot_file.h): a checkpoint every step is one memcpy into
// the same pages of host memory, and a rank killed while writing one slot still holds the checkpoints before in
// the others (its torn slot's stamps differ). More slots let a replica on another host lag that many steps
// behind and still meet the others.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/checkpoint/checkpoint.h"

namespace megascale::trainer {

struct RankCheckpoint {
  std::string shape;  // what the state belongs to: equal texts mean it fits
  TrainingState state;
  int64_t optimizer_steps = 0;
  std::vector<float> shards;                   // read back whole
  std::vector<std::string_view> shard_pieces;  // written: the rank's state in place, in order, without a copy
};

std::string rankCheckpointDir(const std::string& dir, int rank);

/// Writes the rank's checkpoint over the oldest of its `slots` slots (in turn within this process; after a
/// restart, first the one holding the oldest step). Throws std::runtime_error on I/O failure.
class RankSlotWriter;
class RankCheckpointWriter {
 public:
  RankCheckpointWriter(std::string dir, int rank, int slots = 2);
  ~RankCheckpointWriter();
  void write(const RankCheckpoint& checkpoint);

 private:
  std::string dir_;
  int rank_;
  int slots_;
  int next_slot_ = -1;  // -1: not chosen yet
  uint64_t generation_;
  std::vector<std::unique_ptr<RankSlotWriter>> mapped_;  // by slot, mapped at their first write
};

/// The steps of the intact checkpoints this rank holds in dir, oldest first (each slot read and checked).
std::vector<int64_t> rankCheckpointSteps(const std::string& dir, int rank);

/// Reads the rank's checkpoint of `step`. Throws std::runtime_error naming the file when no slot holds that step,
/// or it is truncated, corrupt or of another shape.
RankCheckpoint readRankCheckpoint(const std::string& dir, int rank, int64_t step, const std::string& expected_shape);

}  // namespace megascale::trainer
