// Runs one step of a pipeline schedule on this rank's model chunks: forwards and backwards in the schedule's
// order, activations and their gradients over the pipeline links. With overlap on, receives are posted when
// the schedule says (one compute step ahead) and sends complete in the background while the next step
// computes. With it off, no transfer overlaps a compute: a receive is posted when its compute needs it, and a
// send is waited for, with the receiver's acknowledgement, before this rank computes again (after the next
// compute's receive, as Megatron pairs send_forward with recv_backward, or 1F1B would deadlock). The
// acknowledgement makes "waited for" mean delivered, not just handed to the kernel's socket buffer. While a
// rank waits for its sends it also takes (and acknowledges) the next inputs its schedule wants, as Megatron's
// paired send/receive does: in interleaved 1F1B two neighbours block on each other's sends at once.
// With a bf16 wire (bf16 training, as Megatron-LM's pipeline moves its bf16 hidden states) each message is
// rounded to bf16 before it is sent and widened on arrival: half the bytes.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common/status.h"
#include "trainer/kernels/bf16.h"
#include "trainer/model/gpt.h"
#include "trainer/monitor/timeline.h"
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
                  int64_t micro_batch, bool overlap, std::chrono::milliseconds timeout, bool bf16_wire = false);
  ~PipelineRuntime();

  /// One step: every micro-batch through every chunk. micro_batch(m) gives micro-batch m's tokens (read by
  /// the first and last virtual stage). Each token's loss is scaled by loss_scale for backward. Tells zero
  /// (when given) which backward is the last of its chunk. Returns the sum of this rank's token losses (last
  /// stage; 0 elsewhere).
  double run(const std::function<MicroBatchTokens(int)>& micro_batch, float loss_scale, ZeroOptimizer* zero);

  const std::vector<PipeAction>& schedule() const { return schedule_; }
  /// Where computes, transfers and waits are timed (may be null).
  void setTimeline(Timeline* timeline) { timeline_ = timeline; }

 private:
  using Key = std::tuple<int, int>;  // micro-batch, chunk
  struct Transfer {
    std::shared_ptr<Work> work;
    Timeline::Clock::time_point issued;
    bool acknowledged = false;  // no overlap: a receive whose sender has been told it arrived
  };

  std::vector<float>& buffer(std::map<Key, std::vector<float>>& pool, const PipeAction& a);
  /// A message's bytes on the wire: the float buffer itself, or its bf16 copy.
  void* wire(std::map<Key, std::vector<float>>& pool, const PipeAction& a);
  int64_t messageBytes() const { return message_elements_ * (bf16_wire_ ? 2 : 4); }
  mscDataType_t wireType() const { return bf16_wire_ ? mscBfloat16 : mscFloat32; }
  Transfer transfer(const PipelineLink& link, bool gradients, bool send, void* data, int64_t elements,
                    mscDataType_t type = mscFloat32);
  /// data: the transfer carries a message (timed as communication, with bytes), not an acknowledgement.
  void wait(const Transfer& transfer, const char* what, const PipeAction& a, int peer, bool data = true);
  /// The error of transfer `what` of action a with world rank `peer`, naming both ranks.
  Error transferError(ErrorCode code, const char* what, const PipeAction& a, int peer, const std::string& cause) const;
  /// Where a compute's input comes from (activations: the previous stage; gradients: the next) and where
  /// its output goes.
  void traceFlows(const PipeAction& a, bool backward, bool first, bool last, Timeline::Clock::time_point start,
                  Timeline::Clock::time_point end);
  const PipelineLink& inputLink(bool gradient) const { return gradient ? groups_.next : groups_.previous; }
  const PipelineLink& outputLink(bool gradient) const { return gradient ? groups_.previous : groups_.next; }
  std::optional<Transfer> takeReceive(PipeOp op, const PipeAction& a);
  void acknowledge(const PipelineLink& link, bool gradients);
  void post(PipeOp op, const PipeAction& a);
  /// Waits for the pending sends; with overlap off, until their receivers acknowledge them, taking the
  /// inputs of the computes after schedule position `position` meanwhile.
  void waitDelivered(size_t position);
  /// No overlap: on each input link but that of `awaiting` (an input not yet arrived), posts the receives the
  /// schedule wants after `position` in order and acknowledges every one that has arrived, up to the first
  /// that has not.
  void takeArrivedInputs(size_t position, std::optional<PipeOp> awaiting = std::nullopt);

  PipelineShape shape_;
  const ProcessGroups& groups_;
  std::vector<Gpt<float>*> chunks_;
  int64_t micro_batch_;
  bool overlap_;
  std::chrono::milliseconds timeout_;
  bool bf16_wire_;
  int64_t message_elements_;
  std::vector<PipeAction> schedule_;
  std::map<Key, std::vector<float>> activations_out_, activations_in_, gradients_out_, gradients_in_;
  std::map<const void*, std::map<Key, std::vector<bf16>>> wire_;  // bf16 wire: per float pool, the copies
  std::map<std::tuple<int, int, int>, Transfer> receives_;  // (op, micro-batch, chunk)
  std::vector<std::pair<Transfer, PipeAction>> sends_;
  std::vector<std::pair<Transfer, std::unique_ptr<float>>> ack_receives_;  // no overlap: one per send
  float ack_out_ = 1;
  Timeline* timeline_ = nullptr;
};

}  // namespace megascale::trainer
