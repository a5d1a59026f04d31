#include "trainer/parallel/parallel_checkpoint.h"

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/config.h"

namespace megascale::trainer {

namespace {

using Clock = std::chrono::steady_clock;

void waitOrThrow(const std::shared_ptr<Work>& work, std::chrono::milliseconds timeout, const std::string& what) {
  const Status status = work->wait(timeout);
  if (!status.isOk()) throw Error(status.code(), what + ": " + status.message());
}

struct RestoredState {  // broadcast from each shard's reader to its DP group
  int64_t step, data_position, optimizer_steps;
  std::array<uint64_t, 4> rng;
};

}  // namespace

ParallelCheckpointer::ParallelCheckpointer(ParallelTrainer& trainer, const ModelConfig& model,
                                           const OptimizerConfig& optimizer, std::chrono::milliseconds timeout)
    : trainer_(trainer), model_(model), optimizer_(optimizer), timeout_(timeout) {
  completion_ = trainer.groups().world->split(0, trainer.groups().world->rank());
  completion_->setName("ckpt");
}

ParallelCheckpointer::~ParallelCheckpointer() {
  if (writer_.joinable()) writer_.join();
}

std::string ParallelCheckpointer::rankLocalShape() const {
  const ProcessGroups& g = trainer_.groups();
  return describeShape(model_, optimizer_) + "layout=" + g.layout.describe("x") + "\nchunks=" +
         std::to_string(trainer_.chunks().size()) + "\nrank=" + std::to_string(g.world->rank()) + "\nstate=" +
         std::to_string(trainer_.optimizer().shardStateElements()) + "\n";
}

void ParallelCheckpointer::saveRankLocal(const CheckpointTarget& target, const TrainingState& state) {
  const ZeroOptimizer& zero = trainer_.optimizer();
  RankCheckpoint c;
  c.shape = rankLocalShape();
  c.state = state;
  c.optimizer_steps = zero.steps();
  c.shard_pieces = zero.shardStateViews();
  if (!rank_writer_ || rank_writer_dir_ != target.dir) {
    rank_writer_ = std::make_unique<RankCheckpointWriter>(
        target.dir, trainer_.groups().world->rank(),
        static_cast<int>(config::getInt("MEGASCALE_MEMORY_CHECKPOINT_SLOTS")));
    rank_writer_dir_ = target.dir;
  }
  rank_writer_->write(c);
}

std::optional<TrainingState> ParallelCheckpointer::restoreRankLocal(const std::string& dir) {
  const ProcessGroups& g = trainer_.groups();
  const int rank = g.world->rank();
  // The newest step every rank holds: ranks that died mid-step may be one checkpoint behind the others.
  const std::vector<int64_t> steps = rankCheckpointSteps(dir, rank);
  int64_t newest = steps.empty() ? -1 : steps.back(), common = newest;
  waitOrThrow(g.world->allReduce(&newest, &common, 1, mscInt64, mscMin), timeout_, "agreeing on a rank checkpoint");
  if (common < 0) return std::nullopt;
  int ok = 1, all_ok = 1;
  std::string problem;
  RankCheckpoint c;
  try {
    c = readRankCheckpoint(dir, rank, common, rankLocalShape());
  } catch (const std::exception& e) {
    ok = 0;
    problem = e.what();
  }
  waitOrThrow(g.world->allReduce(&ok, &all_ok, 1, mscInt32, mscMin), timeout_, "rank checkpoint agreement");
  if (!all_ok) {
    throw std::runtime_error(problem.empty() ? "another rank could not load its checkpoint of step " +
                                                   std::to_string(common) + " in " + dir
                                             : problem);
  }
  ZeroOptimizer& zero = trainer_.optimizer();
  zero.restoreShardState(c.shards.data());
  zero.setSteps(c.optimizer_steps);
  return c.state;
}

void ParallelCheckpointer::save(const std::vector<CheckpointTarget>& all_targets, const TrainingState& state) {
  std::vector<CheckpointTarget> targets;  // the shared ones, written in the background
  const auto t0 = Clock::now();
  for (const CheckpointTarget& t : all_targets) {
    if (t.rank_local) {
      saveRankLocal(t, state);
    } else {
      targets.push_back(t);
    }
  }
  snapshot_seconds_ = std::chrono::duration<double>(Clock::now() - t0).count();
  if (targets.empty()) return;
  finish();
  const auto snapshot_start = Clock::now();
  const ProcessGroups& g = trainer_.groups();
  ZeroOptimizer& zero = trainer_.optimizer();
  zero.synchronizeParameters();
  std::vector<std::vector<float>> params, m, v;
  zero.gatherMasterWeights(params);  // the chunks may hold their bf16 values (bf16 communication)
  zero.gatherMoments(m, v);
  std::unique_ptr<ShardSnapshot> snapshot;
  if (g.me.dp() == 0) {
    snapshot = std::make_unique<ShardSnapshot>();
    snapshot->shape = describeShape(model_, optimizer_);
    snapshot->state = state;
    snapshot->optimizer_steps = zero.steps();
    for (size_t c = 0; c < trainer_.chunks().size(); ++c) {
      const Gpt<float>& chunk = *trainer_.chunks()[c];
      for (const ParamSpec& spec : chunk.parameterTable()) {
        const auto from = [&](const float* base) {
          return std::vector<float>(base + spec.offset, base + spec.offset + spec.size());
        };
        snapshot->tensors.push_back({spec, from(params[c].data()), from(m[c].data()), from(v[c].data())});
      }
    }
  }
  snapshot_seconds_ += std::chrono::duration<double>(Clock::now() - snapshot_start).count();
  writer_ = std::thread(&ParallelCheckpointer::writeInBackground, this, targets, state.step, std::move(snapshot));
}

void ParallelCheckpointer::writeInBackground(std::vector<CheckpointTarget> targets, int64_t step,
                                             std::unique_ptr<ShardSnapshot> snapshot) {
  std::string problems;
  for (const CheckpointTarget& target : targets) {
    const std::string problem = writeAndPublish(target, step, snapshot.get());
    if (!problem.empty()) problems += (problems.empty() ? "" : "; ") + problem;
  }
  failed_ = !problems.empty();
  failure_ = problems;
}

std::string ParallelCheckpointer::writeAndPublish(const CheckpointTarget& target, int64_t step,
                                                  const ShardSnapshot* snapshot) {
  const ProcessGroups& g = trainer_.groups();
  const std::string& dir = target.dir;
  const int keep = target.keep;
  const std::string step_dir = shardedCheckpointDir(dir, step);
  int ok = 1;
  std::string problem;
  if (snapshot != nullptr) {
    try {
      std::error_code ec;
      std::filesystem::create_directories(step_dir, ec);
      if (ec) throw std::runtime_error("cannot create " + step_dir + ": " + ec.message());
      writeShard(step_dir + "/" + shardFileName(g.me.tp(), g.me.pp()), *snapshot);
    } catch (const std::exception& e) {
      ok = 0;
      problem = e.what();
    }
  }
  try {
    int all_ok = ok;
    waitOrThrow(completion_->allReduce(&ok, &all_ok, 1, mscInt32, mscMin), timeout_, "checkpoint completion");
    if (!all_ok && problem.empty()) problem = "another rank failed to write its shard of " + step_dir;
    // Every rank returns from finish() only once `latest` names the step (or knows it could not).
    int published = 0;
    if (all_ok && completion_->rank() == 0) {
      try {
        publishCheckpoint(dir, std::filesystem::path(step_dir).filename().string(), keep);
        published = 1;
      } catch (const std::exception& e) {
        problem = e.what();
      }
    }
    waitOrThrow(completion_->broadcast(&published, &published, 1, mscInt32, 0), timeout_, "checkpoint publication");
    if (all_ok && !published && problem.empty()) problem = "rank 0 could not point " + dir + "/latest at " + step_dir;
    ok = all_ok && published;
  } catch (const std::exception& e) {
    ok = 0;
    problem = e.what();
  }
  return ok ? "" : problem;
}

void ParallelCheckpointer::finish() {
  if (writer_.joinable()) writer_.join();
  if (failed_) {
    failed_ = false;
    throw std::runtime_error("checkpoint failed: " + failure_);
  }
}

std::optional<TrainingState> ParallelCheckpointer::restore(const std::string& dir) {
  const ProcessGroups& g = trainer_.groups();
  char path[1024] = {};
  if (g.world->rank() == 0) std::strncpy(path, latestCheckpoint(dir).c_str(), sizeof(path) - 1);
  waitOrThrow(g.world->broadcast(path, path, sizeof(path), mscUint8, 0), timeout_, "sharing the checkpoint path");
  if (path[0] == '\0') return std::nullopt;

  const auto& chunks = trainer_.chunks();
  std::vector<std::vector<float>> params(chunks.size()), m(chunks.size()), v(chunks.size());
  for (size_t c = 0; c < chunks.size(); ++c) {
    params[c].assign(static_cast<size_t>(chunks[c]->parameterCount()), 0.0f);
    m[c].assign(params[c].size(), 0.0f);
    v[c].assign(params[c].size(), 0.0f);
  }
  RestoredState state{};
  int ok = 1;
  std::string problem;
  if (g.me.dp() == 0) {  // one reader per DP group
    try {
      const CheckpointReader reader(path, model_, optimizer_);
      for (size_t c = 0; c < chunks.size(); ++c) {
        reader.slice(chunks[c]->parameterTable(), params[c].data(), m[c].data(), v[c].data());
      }
      state = RestoredState{reader.state().step, reader.state().data_position, reader.optimizerSteps(),
                            reader.state().rng};
    } catch (const std::exception& e) {
      ok = 0;
      problem = e.what();
    }
  }
  int all_ok = ok;
  waitOrThrow(g.world->allReduce(&ok, &all_ok, 1, mscInt32, mscMin), timeout_, "checkpoint restore agreement");
  if (!all_ok) {
    throw std::runtime_error(problem.empty() ? std::string("restoring ") + path + " failed on another rank"
                                             : problem);
  }
  const auto share = [&](void* data, size_t bytes, const char* what) {
    waitOrThrow(g.dp->broadcast(data, data, bytes, mscUint8, 0), timeout_, std::string("broadcasting the ") + what);
  };
  share(&state, sizeof(state), "restored step");
  for (size_t c = 0; c < chunks.size(); ++c) {
    share(params[c].data(), params[c].size() * sizeof(float), "restored parameters");
    share(m[c].data(), m[c].size() * sizeof(float), "restored moments");
    share(v[c].data(), v[c].size() * sizeof(float), "restored moments");
    std::copy(params[c].begin(), params[c].end(), chunks[c]->parameters());
    chunks[c]->refreshRoundedWeights();
  }
  ZeroOptimizer& zero = trainer_.optimizer();
  zero.synchronizeParameters();
  for (size_t c = 0; c < chunks.size(); ++c) std::copy(params[c].begin(), params[c].end(), chunks[c]->parameters());
  zero.setMoments(m, v);
  zero.reloadMasterWeights();
  zero.setSteps(state.optimizer_steps);
  TrainingState out;
  out.step = state.step;
  out.data_position = state.data_position;
  out.rng = state.rng;
  return out;
}

}  // namespace megascale::trainer
