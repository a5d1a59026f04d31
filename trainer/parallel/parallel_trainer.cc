#include "trainer/parallel/parallel_trainer.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace megascale::trainer {

std::pair<int64_t, int64_t> ParallelTrainer::stageLayers(int64_t layers, int stages, int stage) {
  return {layers * stage / stages, layers * (stage + 1) / stages};
}

ParallelTrainer::ParallelTrainer(const ModelConfig& model, const OptimizerConfig& optimizer,
                                 const ParallelConfig& parallel, int64_t global_batch,
                                 std::shared_ptr<Communicator> world, uint64_t seed, Precision precision)
    : model_(model), parallel_(parallel), global_batch_(global_batch) {
  const PipelineShape shape{parallel.pp, parallel.virtual_stages, parallel.micro_batches, parallel.pp_extra_warmup,
                            parallel.micro_batch_group};
  shape.validate();
  model.validate();
  const ParallelLayout layout = ParallelLayout::forWorld(world->size(), parallel.tp, parallel.pp);
  const int virtual_stages = parallel.pp * parallel.virtual_stages;
  if (model.layers < virtual_stages) {
    throw std::invalid_argument("--layers " + std::to_string(model.layers) + " cannot fill " +
                                std::to_string(virtual_stages) + " pipeline stages (pp x virtual stages)");
  }
  if (global_batch % (layout.dp() * parallel.micro_batches) != 0) {
    throw std::invalid_argument("--batch-size " + std::to_string(global_batch) + " must divide into " +
                                std::to_string(layout.dp()) + " data-parallel ranks x " +
                                std::to_string(parallel.micro_batches) + " micro-batches");
  }
  micro_batch_ = global_batch / (layout.dp() * parallel.micro_batches);
  groups_ = ProcessGroups::create(std::move(world), parallel.tp, parallel.pp, parallel.virtual_stages > 1,
                                  parallel.pp_traffic_class);
  tensor_parallel_ = std::make_unique<TensorParallelGroup>(groups_.tp, parallel.overlap_tp ? parallel.tp_chunks : 1,
                                                           parallel.timeout);
  std::vector<Gpt<float>*> views;
  for (int c = 0; c < parallel.virtual_stages; ++c) {
    const auto [first, end] = stageLayers(model.layers, virtual_stages, virtualStage(shape, groups_.me.pp(), c));
    ModelSlice slice;
    slice.tp_size = parallel.tp;
    slice.tp_rank = groups_.me.tp();
    slice.first_layer = first;
    slice.layer_count = end - first;
    auto chunk = std::make_unique<Gpt<float>>(model, slice, tensor_parallel_.get());
    chunk->localRows(micro_batch_);  // throws unless the micro-batch's rows split across the TP ranks
    chunk->initialize(seed);
    if (precision == Precision::kBf16) chunk->setPrecision(Precision::kBf16);
    views.push_back(chunk.get());
    chunks_.push_back(std::move(chunk));
  }
  ZeroOptions zero;
  zero.optimizer = optimizer;
  zero.bucket_elements = parallel.bucket_elements;
  zero.overlap = parallel.overlap_dp;
  zero.bf16_communication = parallel.dp_bf16_communication;
  zero.timeout = parallel.timeout;
  zero_ = std::make_unique<ZeroOptimizer>(zero, views, groups_);
  pipeline_ = std::make_unique<PipelineRuntime>(shape, groups_, views, micro_batch_, parallel.overlap_pp,
                                                parallel.timeout, parallel.pp_bf16_communication);
  tensor_parallel_->setTimeline(&timeline_);
  zero_->setTimeline(&timeline_);
  pipeline_->setTimeline(&timeline_);
  // A common epoch for every rank's trace: rank 0's moment after a barrier, in wall-clock time, which every
  // process of a host reads alike (across hosts, as well as NTP keeps them): a rank that the scheduler kept off
  // its core after the barrier would otherwise shift all its spans by that delay.
  const Status synced = groups_.world->barrier()->wait(parallel.timeout);
  if (!synced.isOk()) throw Error(synced.code(), "trainer start barrier: " + synced.message());
  const Timeline::Clock::time_point steady = Timeline::Clock::now();
  const int64_t wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count();
  int64_t root_wall_ns = wall_ns;
  const Status shared = groups_.world->broadcast(&root_wall_ns, &root_wall_ns, 1, mscInt64, 0)->wait(parallel.timeout);
  if (!shared.isOk()) throw Error(shared.code(), "trainer start: sharing the trace's epoch: " + shared.message());
  timeline_ = Timeline(steady - std::chrono::nanoseconds(wall_ns - root_wall_ns));
}

ParallelTrainer::~ParallelTrainer() = default;

std::string ParallelTrainer::gatherTrace() {
  const ProcessGroups& g = groups_;
  // Each rank is named by its coordinates and sorted in the layout's order (pipeline stage outermost, then
  // data-parallel replica, then tensor-parallel rank): a micro-batch's arrows run down the page stage by stage.
  const std::string mine = timeline_.traceEvents(
      g.world->rank(), "rank " + std::to_string(g.world->rank()) + ": " + g.layout.describe(g.me),
      g.layout.rankOf(g.me));
  const auto n = static_cast<size_t>(g.world->size());
  int64_t length = static_cast<int64_t>(mine.size());
  std::vector<int64_t> lengths(n);
  const auto check = [&](const std::shared_ptr<Work>& work) {
    const Status status = work->wait(parallel_.timeout);
    if (!status.isOk()) throw Error(status.code(), "gathering the trace: " + status.message());
  };
  check(g.world->allGather(&length, lengths.data(), 1, mscInt64));
  const int64_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::string padded = mine;
  padded.resize(static_cast<size_t>(longest), ' ');
  std::string all(static_cast<size_t>(longest) * n, ' ');
  check(g.world->allGather(padded.data(), all.data(), static_cast<size_t>(longest), mscUint8));
  if (g.world->rank() != 0) return "";
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  for (size_t r = 0; r < n; ++r) {
    if (r > 0) out += ",";
    out.append(all, r * static_cast<size_t>(longest), static_cast<size_t>(lengths[r]));
  }
  return out + "]}\n";
}

bool ParallelTrainer::isReporter() const {
  return groups_.me.tp() == 0 && groups_.me.dp() == 0 && groups_.me.pp() == groups_.layout.pp() - 1;
}

ParallelStepResult ParallelTrainer::step(const int32_t* tokens, const int32_t* targets, double lr, bool stop_vote) {
  for (auto& chunk : chunks_) chunk->zeroGradients();
  const int64_t seq = model_.seq_len, per_dp = global_batch_ / groups_.layout.dp();
  const auto micro = [&](int m) {
    const int64_t first_row = (groups_.me.dp() * per_dp + m * micro_batch_) * seq;
    return MicroBatchTokens{tokens + first_row, targets + first_row};
  };
  const float scale = 1.0f / static_cast<float>(global_batch_ * seq);
  // The loss and the ranks' stop votes, summed in one all-reduce.
  double sums[2] = {pipeline_->run(micro, scale, zero_.get()), stop_vote ? 1.0 : 0.0};
  // Waited for after the optimizer: the ranks whose pipeline ends first go on to their reduce-scatters.
  const auto loss_sum = groups_.world->allReduce(sums, sums, 2, mscFloat64, mscSum);
  ParallelStepResult result;
  const auto t0 = Timeline::Clock::now();
  try {
    result.grad_norm = zero_->step(lr);
  } catch (...) {
    (void)loss_sum->wait(parallel_.timeout);  // it writes into `sums`
    throw;
  }
  timeline_.optimizerSpan(t0, Timeline::Clock::now());
  const Status status = loss_sum->wait(parallel_.timeout);
  if (!status.isOk()) {
    throw Error(status.code(), "loss all-reduce (world rank " + std::to_string(groups_.world->rank()) +
                                   "): " + status.message());
  }
  result.loss = sums[0] / static_cast<double>(global_batch_ * seq);
  result.stop = sums[1] > 0;
  return result;
}

}  // namespace megascale::trainer
