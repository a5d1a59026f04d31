// One rank of the 3D-parallel trainer: its process groups, its model chunks (a tensor-parallel slice of each
// of its virtual pipeline stages), the pipeline runtime and the ZeRO-2 optimizer, driven one step at a time.
// Every rank is given the whole global batch's tokens and reads its own rows: DP rank d takes sequences
// [d B/D, (d+1) B/D), cut into micro-batches; TP ranks of one group read the same ones.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "collectives/communicator.h"
#include "trainer/model/gpt.h"
#include "trainer/optim/optimizer.h"
#include "trainer/parallel/pipeline_runtime.h"
#include "trainer/parallel/process_groups.h"
#include "trainer/parallel/tensor_parallel.h"
#include "trainer/parallel/zero_optimizer.h"

namespace megascale::trainer {

struct ParallelConfig {
  int tp = 1, pp = 1, virtual_stages = 1, micro_batches = 1;
  int pp_extra_warmup = 0;  // PipelineShape::extra_warmup
  int micro_batch_group = 0;  // PipelineShape::micro_batch_group (interleaved; 0 = pp)
  bool overlap_tp = true, overlap_pp = true, overlap_dp = true;
  int tp_chunks = 4;                    // pieces each TP all-gather / reduce-scatter is cut into (overlap on)
  int64_t bucket_elements = 1 << 20;    // DP gradient bucket
  bool dp_bf16_communication = false;   // ZeroOptions::bf16_communication
  bool pp_bf16_communication = false;   // activations and their gradients cross the pipeline links in bf16
  int pp_traffic_class = -1;            // the pipeline links' TOS byte (priority queues); -1: the world's
  std::chrono::milliseconds timeout{300000};
};

struct ParallelStepResult {
  double loss = 0;       // mean token loss of the global batch (every rank)
  double grad_norm = 0;  // before clipping (every rank)
  bool stop = false;     // some rank voted to stop after this step (every rank agrees)
};

class ParallelTrainer {
 public:
  /// Collective over `world`. Throws std::invalid_argument for a layout that does not fit the model or batch.
  ParallelTrainer(const ModelConfig& model, const OptimizerConfig& optimizer, const ParallelConfig& parallel,
                  int64_t global_batch, std::shared_ptr<Communicator> world, uint64_t seed, Precision precision);
  ~ParallelTrainer();

  /// One optimizer step on the global batch's tokens and targets [global_batch, seq_len]. stop_vote: this rank
  /// asks the job to stop after this step; the votes travel with the loss's all-reduce, so all ranks agree.
  ParallelStepResult step(const int32_t* tokens, const int32_t* targets, double lr, bool stop_vote = false);

  const ProcessGroups& groups() const { return groups_; }
  const std::vector<std::unique_ptr<Gpt<float>>>& chunks() const { return chunks_; }
  ZeroOptimizer& optimizer() { return *zero_; }
  PipelineRuntime& pipeline() { return *pipeline_; }
  /// This step's (and the last step's) timers; spans kept for the trace while recording.
  Timeline& timeline() { return timeline_; }
  /// Every rank's kept spans merged into one Chrome/Perfetto trace (collective; the text on world rank 0).
  std::string gatherTrace();
  /// This rank writes the run's output: the last pipeline stage's first TP and DP rank.
  bool isReporter() const;
  int64_t microBatchSize() const { return micro_batch_; }
  /// Layers [first, end) of virtual stage s (s = chunk x P + pipeline rank).
  static std::pair<int64_t, int64_t> stageLayers(int64_t layers, int stages, int stage);

 private:
  ModelConfig model_;
  ParallelConfig parallel_;
  int64_t global_batch_, micro_batch_;
  Timeline timeline_;
  ProcessGroups groups_;
  std::unique_ptr<TensorParallelGroup> tensor_parallel_;
  std::vector<std::unique_ptr<Gpt<float>>> chunks_;
  std::unique_ptr<ZeroOptimizer> zero_;
  std::unique_ptr<PipelineRuntime> pipeline_;
};

}  // namespace megascale::trainer
