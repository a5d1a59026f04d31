// Checkpoints of the parallel trainer: one file per (tensor-parallel rank, pipeline rank) shard, written by the
// first data-parallel rank that holds it, in a directory per step (dir/step_NNNNNNNN/shard_tpT_ppP.ckpt;
// dir/latest names the newest complete one). Each file holds, per tensor, this shard's parameters and Adam
// moments with the tensor's global shape and how it is cut, so a checkpoint of one layout loads into any
// other (and into one process): a reader assembles each tensor whole from the files that hold its parts.
// Files are section files (trainer/io/section_file.h): atomic, checksummed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trainer/checkpoint/checkpoint.h"
#include "trainer/model/parameters.h"

namespace megascale::trainer {

/// What one shard file holds: copied out of the trainer (a snapshot), then written while training goes on.
struct ShardSnapshot {
  std::string shape;  // describeShape(): the model the checkpoint belongs to
  TrainingState state;
  int64_t optimizer_steps = 0;
  struct Tensor {
    ParamSpec spec;
    std::vector<float> param, m, v;  // this shard's part
  };
  std::vector<Tensor> tensors;
};

/// dir/step_NNNNNNNN (a directory of shards).
std::string shardedCheckpointDir(const std::string& dir, int64_t step);
std::string shardFileName(int tp_rank, int pp_rank);

/// Writes the snapshot to `path`. Throws std::runtime_error on I/O failure.
void writeShard(const std::string& path, const ShardSnapshot& snapshot);

/// Points dir/latest at `name` (a step file or directory) and removes all but the newest `keep` checkpoints.
void publishCheckpoint(const std::string& dir, const std::string& name, int keep);

/// Reads a checkpoint, sharded (a directory of shard files) or of one process (a file), and hands out whole
/// tensors.
class CheckpointReader {
 public:
  /// Throws std::runtime_error naming the file and the problem (missing, truncated, corrupt, another model).
  CheckpointReader(const std::string& path, const ModelConfig& model, const OptimizerConfig& optimizer);
  ~CheckpointReader();

  const TrainingState& state() const { return state_; }
  int64_t optimizerSteps() const { return optimizer_steps_; }
  /// The whole tensor's parameters and moments (globalSize(spec) elements each). Throws if a part is missing.
  void wholeTensor(const ParamSpec& spec, std::vector<float>& param, std::vector<float>& m,
                   std::vector<float>& v) const;
  /// This slice's flat parameter and moment buffers (laid out by `table`), cut from the whole tensors.
  void slice(const std::vector<ParamSpec>& table, float* param, float* m, float* v) const;

 private:
  struct Part;
  std::string path_;
  TrainingState state_;
  int64_t optimizer_steps_ = 0;
  std::multimap<std::string, Part> parts_;  // by tensor name
  std::vector<std::unique_ptr<class SectionFile>> files_;
};

}  // namespace megascale::trainer
