// Checkpoints of a ParallelTrainer in two stages (CheckFreq's snapshot-then-persist): save() copies this rank's
// shard into memory, which is all training waits for (the DP ranks' optimizer moments are gathered to the
// shard's writer), and a background thread writes the file; once every shard is on disk, world rank 0 points
// `latest` at the step. Restore: the first DP rank of each shard reads the checkpoint (of any layout) and
// broadcasts its shard to the other DP ranks over the library.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "trainer/checkpoint/rank_checkpoint.h"
#include "trainer/checkpoint/sharded_checkpoint.h"
#include "trainer/parallel/parallel_trainer.h"

namespace megascale::trainer {

class ParallelCheckpointer {
 public:
  /// Collective over the trainer's world (it makes the communicator the background writers agree on).
  ParallelCheckpointer(ParallelTrainer& trainer, const ModelConfig& model, const OptimizerConfig& optimizer,
                       std::chrono::milliseconds timeout);
  ~ParallelCheckpointer();

  /// Collective. Returns once the snapshot is in memory; the writes (to each target in turn, each published once
  /// complete) go on in the background.
  void save(const std::vector<CheckpointTarget>& targets, const TrainingState& state);
  /// Collective: waits for the background write. Throws on every rank if any shard failed to be written.
  void finish();
  /// Collective: loads dir/latest (sharded, of any layout, or one process's) into the trainer; nothing when
  /// the directory has no checkpoint.
  std::optional<TrainingState> restore(const std::string& dir);
  /// Collective: loads the newest step that every rank holds a rank-local checkpoint of in dir; nothing when
  /// some rank holds none. Throws on every rank if a rank cannot load its own (the caller falls back).
  std::optional<TrainingState> restoreRankLocal(const std::string& dir);

  /// Seconds the last save() blocked training for.
  double lastSnapshotSeconds() const { return snapshot_seconds_; }

 private:
  /// This rank's own state into target (rank_local): no communication.
  void saveRankLocal(const CheckpointTarget& target, const TrainingState& state);
  /// What a rank-local checkpoint of this rank must match: model, optimizer, layout, rank and state size.
  std::string rankLocalShape() const;
  void writeInBackground(std::vector<CheckpointTarget> targets, int64_t step, std::unique_ptr<ShardSnapshot> snapshot);
  /// Writes this rank's shard (if it has one) into target.dir and publishes the step there once every shard is
  /// written. Collective over the writers' communicator. Returns "" or what went wrong.
  std::string writeAndPublish(const CheckpointTarget& target, int64_t step, const ShardSnapshot* snapshot);

  ParallelTrainer& trainer_;
  ModelConfig model_;
  OptimizerConfig optimizer_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<Communicator> completion_;  // the background writers' own communicator
  std::thread writer_;
  std::unique_ptr<RankCheckpointWriter> rank_writer_;  // rank-local checkpoints, into rank_writer_dir_
  std::string rank_writer_dir_;
  bool failed_ = false;
  std::string failure_;
  double snapshot_seconds_ = 0;
};

}  // namespace megascale::trainer
