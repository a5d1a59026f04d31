#include "trainer/parallel/pipeline_schedule.h"

#include <algorithm>
#include <stdexcept>

namespace megascale::trainer {

void PipelineShape::validate() const {
  if (stages < 1) throw std::invalid_argument("pipeline stages must be at least 1 (got " + std::to_string(stages) + ")");
  if (virtual_stages < 1) {
    throw std::invalid_argument("--virtual-stages must be at least 1 (got " + std::to_string(virtual_stages) + ")");
  }
  if (micro_batches < 1) {
    throw std::invalid_argument("--micro-batches must be at least 1 (got " + std::to_string(micro_batches) + ")");
  }
  if (extra_warmup < 0) {
    throw std::invalid_argument("--pp-extra-warmup must be at least 0 (got " + std::to_string(extra_warmup) + ")");
  }
  if (micro_batch_group < 0) {
    throw std::invalid_argument("--microbatch-group-size must be at least 0 (got " + std::to_string(micro_batch_group) + ")");
  }
  if (micro_batch_group > 0 && virtual_stages == 1) {
    throw std::invalid_argument("--microbatch-group-size needs --virtual-stages > 1");
  }
  if (virtual_stages > 1) {
    // More forwards up front would break the interleaved order's groups of P micro-batches.
    if (extra_warmup > 0) throw std::invalid_argument("--pp-extra-warmup needs --virtual-stages 1");
    if (stages < 2) throw std::invalid_argument("--virtual-stages > 1 needs at least 2 pipeline stages");
    if (group() < stages) {
      throw std::invalid_argument("--microbatch-group-size (" + std::to_string(group()) +
                                  ") must be at least the pipeline stages (" + std::to_string(stages) + ")");
    }
    if (micro_batches % group() != 0) {
      throw std::invalid_argument("interleaved 1F1B needs --micro-batches (" + std::to_string(micro_batches) +
                                  ") to be a multiple of " +
                                  (micro_batch_group > 0 ? "--microbatch-group-size (" : "the pipeline stages (") +
                                  std::to_string(group()) + ")");
    }
  }
}

int virtualStage(const PipelineShape& shape, int rank, int chunk) { return chunk * shape.stages + rank; }

bool isFirstStage(const PipelineShape& shape, int rank, int chunk) { return virtualStage(shape, rank, chunk) == 0; }

bool isLastStage(const PipelineShape& shape, int rank, int chunk) {
  return virtualStage(shape, rank, chunk) == shape.stages * shape.virtual_stages - 1;
}

StagePeer nextStage(const PipelineShape& shape, int rank, int chunk) {
  return rank + 1 < shape.stages ? StagePeer{rank + 1, chunk} : StagePeer{0, chunk + 1};
}

StagePeer previousStage(const PipelineShape& shape, int rank, int chunk) {
  return rank > 0 ? StagePeer{rank - 1, chunk} : StagePeer{shape.stages - 1, chunk - 1};
}

namespace {

struct Compute {
  bool forward;
  int micro_batch, chunk;
};

// The order of forwards and backwards on one rank (Megatron-LM's 1F1B and interleaved 1F1B).
std::vector<Compute> computeOrder(const PipelineShape& s, int rank) {
  const int p = s.stages, v = s.virtual_stages, m = s.micro_batches;
  std::vector<Compute> order;
  if (v == 1) {
    const int warmup = std::min((p - rank - 1) * (1 + s.extra_warmup), m);
    for (int i = 0; i < warmup; ++i) order.push_back({true, i, 0});
    for (int i = 0; i < m - warmup; ++i) {
      order.push_back({true, warmup + i, 0});
      order.push_back({false, i, 0});
    }
    for (int i = m - warmup; i < m; ++i) order.push_back({false, i, 0});
    return order;
  }
  // Interleaved: virtual micro-batch k walks the chunks in groups of g micro-batches; backward visits the
  // chunks in reverse.
  const int g = s.group();
  const int total = m * v;
  const int warmup = m == p ? total : std::min((p - rank - 1) * 2 + (v - 1) * g, total);
  const auto micro = [&](int k) { return (k / (g * v)) * g + k % g; };
  const auto forward = [&](int k) { return Compute{true, micro(k), (k / g) % v}; };
  const auto backward = [&](int k) { return Compute{false, micro(k), v - 1 - (k / g) % v}; };
  for (int k = 0; k < warmup; ++k) order.push_back(forward(k));
  for (int i = 0; i < total - warmup; ++i) {
    order.push_back(forward(warmup + i));
    order.push_back(backward(i));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(backward(k));
  return order;
}

}  // namespace

std::vector<PipeAction> pipelineSchedule(const PipelineShape& shape, int rank) {
  shape.validate();
  if (rank < 0 || rank >= shape.stages) {
    throw std::invalid_argument("pipeline rank " + std::to_string(rank) + " of " + std::to_string(shape.stages));
  }
  const std::vector<Compute> order = computeOrder(shape, rank);
  // A compute's input: the activation from the previous virtual stage, or the gradient from the next.
  const auto receive = [&](const Compute& c, std::vector<PipeAction>& out) {
    if (c.forward && !isFirstStage(shape, rank, c.chunk)) out.push_back({PipeOp::kRecvActivation, c.micro_batch, c.chunk});
    if (!c.forward && !isLastStage(shape, rank, c.chunk)) out.push_back({PipeOp::kRecvGradient, c.micro_batch, c.chunk});
  };
  std::vector<PipeAction> actions;
  if (!order.empty()) receive(order.front(), actions);
  for (size_t i = 0; i < order.size(); ++i) {
    const Compute& c = order[i];
    if (i + 1 < order.size()) receive(order[i + 1], actions);  // posted now, arrives while this one computes
    if (c.forward) {
      actions.push_back({PipeOp::kForward, c.micro_batch, c.chunk});
      if (!isLastStage(shape, rank, c.chunk)) actions.push_back({PipeOp::kSendActivation, c.micro_batch, c.chunk});
    } else {
      actions.push_back({PipeOp::kBackward, c.micro_batch, c.chunk});
      if (!isFirstStage(shape, rank, c.chunk)) actions.push_back({PipeOp::kSendGradient, c.micro_batch, c.chunk});
    }
  }
  return actions;
}

std::string describe(const std::vector<PipeAction>& actions) {
  std::string out;
  for (const PipeAction& a : actions) {
    static const char* const kNames[] = {"rA", "F", "sA", "rG", "B", "sG"};
    if (!out.empty()) out += ' ';
    out += kNames[static_cast<int>(a.op)] + std::to_string(a.micro_batch) + "." + std::to_string(a.chunk);
  }
  return out;
}

}  // namespace megascale::trainer
