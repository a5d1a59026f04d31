// Checkpoints: model weights, optimizer moments and step, data position and RNG state in one file, written
// atomically (temporary file, fsync, rename) with CRC-32C over header and payload. Loading refuses a
// truncated or corrupted file, and a checkpoint of another model shape, with a message that says which.
//
// Layout: a 64-byte header ("MSCKPT01", version, payload bytes, payload CRC, header CRC at 60), then named
// sections: u32 name length, name, u64 byte length, bytes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/model/gpt.h"
#include "trainer/optim/optimizer.h"

namespace megascale::trainer {

struct TrainingState {
  int64_t step = 0;           // steps completed
  int64_t data_position = 0;  // the loader's next batch
  std::array<uint64_t, 4> rng{};
};

/// Throws std::runtime_error on I/O failure.
void saveCheckpoint(const std::string& path, const TrainingState& state, const Gpt<float>& model,
                    Optimizer<float>& optimizer);

/// Fills model, optimizer and state. Throws std::runtime_error naming the file and the problem.
TrainingState loadCheckpoint(const std::string& path, Gpt<float>& model, Optimizer<float>& optimizer);

/// "" when the shapes are equal, else what differs ("saved for another model: {...} but this run is {...}").
std::string shapeMismatch(std::string_view saved_shape, const std::string& expected_shape);
class SectionFile;
/// Throws naming the file unless its "shape" section equals expected_shape.
void checkShape(const SectionFile& file, const std::string& expected_shape);
/// step, data_position and rng of a checkpoint file.
TrainingState readTrainingState(const SectionFile& file);
class SectionWriter;
/// What every checkpoint file starts with: the shape, the training state and the optimizer's step count.
void addCheckpointHeader(SectionWriter& out, const std::string& shape, const TrainingState& state,
                         int64_t optimizer_steps);

/// The text that identifies a model + optimizer shape ("layers=6\nd_model=384\n..."): equal texts mean a
/// checkpoint fits.
std::string describeShape(const ModelConfig& model, const OptimizerConfig& optimizer);

/// Where a checkpoint goes: a directory (on disk, or in host memory that the launcher keeps) and how many of its
/// newest checkpoints stay.
struct CheckpointTarget {
  std::string dir;
  int keep = 2;
  /// Each rank saves only its own state, with no message to another (rank_checkpoint.h): loads only into the
  /// same layout, for restarts. Otherwise the checkpoint loads into any layout.
  bool rank_local = false;
};

/// Checkpoint directories hold step_NNNNNNNN.ckpt files and `latest`, which names the newest complete one.
std::string checkpointPath(const std::string& dir, int64_t step);
/// The path in dir/latest, or "" when there is none.
std::string latestCheckpoint(const std::string& dir);
/// The step dir/latest names (from its name, step_NNNNNNNN...), or -1 when there is none.
int64_t latestStep(const std::string& dir);
/// Saves, points `latest` at it, and removes all but the newest `keep` checkpoints.
void saveToDirectory(const std::string& dir, int keep, const TrainingState& state, const Gpt<float>& model,
                     Optimizer<float>& optimizer);

}  // namespace megascale::trainer
