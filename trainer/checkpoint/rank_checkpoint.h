// Checkpoints of one rank's own state, for a restart of the same job on the same layout: each rank writes the
// optimizer shards it holds (ZeRO: its master weights and moments; the parameters follow from them) with no
// message to any other rank, so a checkpoint every step costs a copy into host memory. Unlike the sharded
// checkpoints (sharded_checkpoint.h) they load only into the layout that wrote them; the shape they record
// (model, optimizer, layout, rank, size) says so, and a mismatch is refused naming the file.
//
// Layout: dir/rank_RRRRR/step_NNNNNNNN.ckpt and dir/rank_RRRRR/latest, section files (atomic, checksummed).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/checkpoint/checkpoint.h"

namespace megascale::trainer {

struct RankCheckpoint {
  std::string shape;  // what the state belongs to: equal texts mean it fits
  TrainingState state;
  int64_t optimizer_steps = 0;
  std::vector<float> shards;  // read back whole
  std::vector<std::string_view> shard_pieces;  // written: the rank's state in place, in order, without a copy
};

std::string rankCheckpointDir(const std::string& dir, int rank);

/// Writes the rank's checkpoint and points its `latest` at it, keeping its newest `keep`. Throws
/// std::runtime_error on I/O failure.
void writeRankCheckpoint(const std::string& dir, int rank, int keep, const RankCheckpoint& checkpoint);

/// The steps of the checkpoints this rank holds in dir, oldest first.
std::vector<int64_t> rankCheckpointSteps(const std::string& dir, int rank);

/// Reads the rank's checkpoint of `step`. Throws std::runtime_error naming the file when it is missing,
/// truncated, corrupt or of another shape.
RankCheckpoint readRankCheckpoint(const std::string& dir, int rank, int64_t step, const std::string& expected_shape);

}  // namespace megascale::trainer
