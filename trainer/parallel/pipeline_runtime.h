// Runs one step of a pipeline schedule on this rank's model chunks: forwards and backwards in the schedule's
// order, activations and their gradients over the pipeline links. With overlap on, receives are posted when
// the schedule says (one compute step ahead) and sends complete in the background while the next step
// computes; with it off, each transfer is waited for where it is issued.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "trainer/model/gpt.h"
#include "trainer/parallel/pipeline_schedule.h"
#include "trainer/parallel/process_groups.h"
#include "trainer/parallel/zero_optimizer.h"

namespace megascale::trainer {

struct MicroBatchTokens {
  const int32_t* tokens = nullptr;   // [micro_batch, seq_len]
  const int32_t* targets = nullptr;  // [micro_batch, seq_len]
};

class PipelineRuntime {
 public:
  /// chunks: this rank's model chunks, chunk c = virtual stage c x P + pipeline rank.
  PipelineRuntime(const PipelineShape& shape, const ProcessGroups& groups, std::vector<Gpt<float>*> chunks,
                  int64_t micro_batch, bool overlap, std::chrono::milliseconds timeout);
  ~PipelineRuntime();

  /// One step: every micro-batch through every chunk. micro_batch(m) gives micro-batch m's tokens (read by
  /// the first and last virtual stage). Each token's loss is scaled by loss_scale for backward. Tells zero
  /// (when given) which backward is the last of its chunk. Returns the sum of this rank's token losses (last
  /// stage; 0 elsewhere).
  double run(const std::function<MicroBatchTokens(int)>& micro_batch, float loss_scale, ZeroOptimizer* zero);

  /// Seconds spent waiting for pipeline transfers since the last call (bubbles and exposed communication).
  double takeWaitSeconds() {
    const double s = wait_seconds_;
    wait_seconds_ = 0;
    return s;
  }
  const std::vector<PipeAction>& schedule() const { return schedule_; }

 private:
  using Key = std::tuple<int, int>;  // micro-batch, chunk
  std::vector<float>& buffer(std::map<Key, std::vector<float>>& pool, const PipeAction& a);
  std::shared_ptr<Work> transfer(const PipelineLink& link, bool gradients, bool send, float* data);
  void wait(const std::shared_ptr<Work>& work, const char* what, const PipeAction& a, int peer);
  std::shared_ptr<Work> takeReceive(PipeOp op, const PipeAction& a);

  PipelineShape shape_;
  const ProcessGroups& groups_;
  std::vector<Gpt<float>*> chunks_;
  int64_t micro_batch_;
  bool overlap_;
  std::chrono::milliseconds timeout_;
  int64_t message_elements_;
  std::vector<PipeAction> schedule_;
  std::map<Key, std::vector<float>> activations_out_, activations_in_, gradients_out_, gradients_in_;
  std::map<std::tuple<int, int, int>, std::shared_ptr<Work>> receives_;  // (op, micro-batch, chunk)
  std::vector<std::shared_ptr<Work>> sends_;
  double wait_seconds_ = 0;
};

}  // namespace megascale::trainer
