// Pipeline schedules as data: for each pipeline rank, the list of what it does in order. 1F1B (PipeDream-
// Flush, as Megatron-LM runs it) and interleaved 1F1B with `virtual_stages` model chunks per rank.
//
// Virtual stage s = chunk * stages + rank holds layers [s L / (P V), (s+1) L / (P V)). Messages travel on
// directed links (sender rank -> receiver rank, activations or gradients), each a FIFO: a rank posts its
// receives in the order its peer sends on that link, so a link needs no tags and a stage's sends never wait
// for anything but the wire (MegaScale's decoupled send/receive). Receives are posted one compute step ahead
// of the computation that needs them, so they arrive while the previous step computes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace megascale::trainer {

struct PipelineShape {
  int stages = 1;          // P: pipeline ranks
  int virtual_stages = 1;  // V: model chunks per rank (interleaved 1F1B when > 1)
  int micro_batches = 1;   // M per step (interleaved: a multiple of P)
  // Eager 1F1B: E more forwards in flight per downstream stage than Megatron's warm-up, so a transfer's
  // latency hides behind computing instead of sitting on the round trip to the last stage. Each hides up to
  // (forward + backward) / 2 of hop latency; each costs a micro-batch of activation memory per stage.
  int extra_warmup = 0;
  // Interleaved: micro-batches per group (Megatron's microbatch group size per virtual stage; 0 = P). Each
  // group runs through a chunk before the next chunk; larger groups put more computes between a chunk's last
  // backward and the step's end (and its first forward and the start), where data parallelism's reduce-scatter
  // and all-gather of that chunk run, at the cost of G - P more forwards in flight per extra chunk.
  int micro_batch_group = 0;
  int group() const { return micro_batch_group > 0 ? micro_batch_group : stages; }
  /// Throws std::invalid_argument naming the offending value.
  void validate() const;
};

enum class PipeOp {
  kRecvActivation,  // post the receive of a forward's input from the previous virtual stage
  kForward,         // waits for its posted input, runs the chunk
  kSendActivation,  // the forward's output to the next virtual stage
  kRecvGradient,    // post the receive of a backward's output gradient from the next virtual stage
  kBackward,
  kSendGradient,    // the backward's input gradient to the previous virtual stage
};

struct PipeAction {
  PipeOp op;
  int micro_batch;
  int chunk;  // model chunk on this rank (0 .. V-1)
  bool operator==(const PipeAction&) const = default;
};

/// Rank `rank`'s actions for one step.
std::vector<PipeAction> pipelineSchedule(const PipelineShape& shape, int rank);

/// The virtual stage of a rank's chunk, and where a message goes: the rank of the next (previous) virtual stage
/// and the chunk there. Valid only where that stage exists.
int virtualStage(const PipelineShape& shape, int rank, int chunk);
struct StagePeer {
  int rank;
  int chunk;
};
StagePeer nextStage(const PipelineShape& shape, int rank, int chunk);
StagePeer previousStage(const PipelineShape& shape, int rank, int chunk);
bool isFirstStage(const PipelineShape& shape, int rank, int chunk);
bool isLastStage(const PipelineShape& shape, int rank, int chunk);

/// "F3.1" style text of a schedule (tests and --print-schedule).
std::string describe(const std::vector<PipeAction>& actions);

}  // namespace megascale::trainer
