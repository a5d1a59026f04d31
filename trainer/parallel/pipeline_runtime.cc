#include "trainer/parallel/pipeline_runtime.h"

#include <stdexcept>
#include <string>

namespace megascale::trainer {

namespace {
using Clock = std::chrono::steady_clock;
}

PipelineRuntime::PipelineRuntime(const PipelineShape& shape, const ProcessGroups& groups,
                                 std::vector<Gpt<float>*> chunks, int64_t micro_batch, bool overlap,
                                 std::chrono::milliseconds timeout)
    : shape_(shape), groups_(groups), chunks_(std::move(chunks)), micro_batch_(micro_batch), overlap_(overlap),
      timeout_(timeout) {
  if (static_cast<int>(chunks_.size()) != shape.virtual_stages) {
    throw std::invalid_argument("the pipeline runtime needs one model chunk per virtual stage");
  }
  schedule_ = pipelineSchedule(shape, groups.me.pp);
  message_elements_ = chunks_.front()->localRows(micro_batch) * chunks_.front()->config().d_model;
}

PipelineRuntime::~PipelineRuntime() {
  for (auto& [key, work] : receives_) (void)work->wait(timeout_);  // the buffers must outlive the transfers
  for (auto& work : sends_) (void)work->wait(timeout_);
}

std::vector<float>& PipelineRuntime::buffer(std::map<Key, std::vector<float>>& pool, const PipeAction& a) {
  auto& b = pool[Key{a.micro_batch, a.chunk}];
  b.resize(static_cast<size_t>(message_elements_));
  return b;
}

std::shared_ptr<Work> PipelineRuntime::transfer(const PipelineLink& link, bool gradients, bool send, float* data) {
  Communicator& comm = gradients ? *link.gradients : *link.activations;
  return comm.pointToPoint({{send, data, static_cast<size_t>(message_elements_), mscFloat32, link.peer}});
}

void PipelineRuntime::wait(const std::shared_ptr<Work>& work, const char* what, const PipeAction& a, int peer) {
  const auto t0 = Clock::now();
  const Status status = work->wait(timeout_);
  wait_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  if (!status.isOk()) {
    throw Error(status.code(), std::string("pipeline ") + what + " of micro-batch " + std::to_string(a.micro_batch) +
                                   " chunk " + std::to_string(a.chunk) + " (world rank " +
                                   std::to_string(groups_.world->rank()) + ", peer world rank " +
                                   std::to_string(peer) + "): " + status.message());
  }
}

std::shared_ptr<Work> PipelineRuntime::takeReceive(PipeOp op, const PipeAction& a) {
  auto it = receives_.find({static_cast<int>(op), a.micro_batch, a.chunk});
  if (it == receives_.end()) return nullptr;
  auto work = it->second;
  receives_.erase(it);
  return work;
}

double PipelineRuntime::run(const std::function<MicroBatchTokens(int)>& micro_batch, float loss_scale,
                            ZeroOptimizer* zero) {
  const int rank = groups_.me.pp;
  double loss = 0;
  const auto post = [&](PipeOp op, const PipeAction& a) {
    const bool gradient = op == PipeOp::kRecvGradient;
    const PipelineLink& link = gradient ? groups_.next : groups_.previous;
    auto& pool = gradient ? gradients_in_ : activations_in_;
    receives_[{static_cast<int>(op), a.micro_batch, a.chunk}] = transfer(link, gradient, false, buffer(pool, a).data());
  };
  // A compute's input: posted earlier (overlap) or now, and waited for.
  const auto input = [&](PipeOp op, const PipeAction& a) -> float* {
    const bool gradient = op == PipeOp::kRecvGradient;
    auto work = takeReceive(op, a);
    if (!work) {
      post(op, a);
      work = takeReceive(op, a);
    }
    wait(work, gradient ? "receive of a gradient" : "receive of an activation", a,
         (gradient ? groups_.next : groups_.previous).peer_global);
    return buffer(gradient ? gradients_in_ : activations_in_, a).data();
  };
  const auto send = [&](bool gradient, const PipeAction& a) {
    const PipelineLink& link = gradient ? groups_.previous : groups_.next;
    auto work = transfer(link, gradient, true, buffer(gradient ? gradients_out_ : activations_out_, a).data());
    if (overlap_) sends_.push_back(std::move(work));
    else wait(work, gradient ? "send of a gradient" : "send of an activation", a, link.peer_global);
  };

  for (const PipeAction& a : schedule_) {
    Gpt<float>& chunk = *chunks_[static_cast<size_t>(a.chunk)];
    const bool first = isFirstStage(shape_, rank, a.chunk), last = isLastStage(shape_, rank, a.chunk);
    switch (a.op) {
      case PipeOp::kRecvActivation:
      case PipeOp::kRecvGradient:
        if (overlap_) post(a.op, a);
        break;
      case PipeOp::kForward: {
        typename Gpt<float>::StageInput in;
        in.batch = micro_batch_;
        in.loss_scale = loss_scale;
        if (first || last) {
          const MicroBatchTokens tokens = micro_batch(a.micro_batch);
          in.tokens = tokens.tokens;
          in.targets = tokens.targets;
        }
        if (!first) in.activations = input(PipeOp::kRecvActivation, a);
        loss += chunk.forwardStage(a.micro_batch, in, last ? nullptr : buffer(activations_out_, a).data());
        break;
      }
      case PipeOp::kBackward: {
        const float* output_grad = last ? nullptr : input(PipeOp::kRecvGradient, a);
        if (zero != nullptr) zero->setFinalBackward(a.micro_batch == shape_.micro_batches - 1);
        chunk.backwardStage(a.micro_batch, output_grad, first ? nullptr : buffer(gradients_out_, a).data());
        if (zero != nullptr) zero->setFinalBackward(false);
        break;
      }
      case PipeOp::kSendActivation:
        send(false, a);
        break;
      case PipeOp::kSendGradient:
        send(true, a);
        break;
    }
  }
  for (auto& work : sends_) wait(work, "send", PipeAction{PipeOp::kSendActivation, -1, -1}, -1);
  sends_.clear();
  return loss;
}

}  // namespace megascale::trainer
