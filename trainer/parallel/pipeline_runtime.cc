#include "trainer/parallel/pipeline_runtime.h"

#include <stdexcept>
#include <string>

namespace megascale::trainer {

namespace {
using Clock = std::chrono::steady_clock;
}

PipelineRuntime::PipelineRuntime(const PipelineShape& shape, const ProcessGroups& groups,
                                 std::vector<Gpt<float>*> chunks, int64_t micro_batch, bool overlap,
                                 std::chrono::milliseconds timeout, bool bf16_wire)
    : shape_(shape), groups_(groups), chunks_(std::move(chunks)), micro_batch_(micro_batch), overlap_(overlap),
      timeout_(timeout), bf16_wire_(bf16_wire) {
  if (static_cast<int>(chunks_.size()) != shape.virtual_stages) {
    throw std::invalid_argument("the pipeline runtime needs one model chunk per virtual stage");
  }
  schedule_ = pipelineSchedule(shape, groups.me.pp());
  message_elements_ = chunks_.front()->localRows(micro_batch) * chunks_.front()->config().d_model;
}

PipelineRuntime::~PipelineRuntime() {
  for (auto& [key, t] : receives_) (void)t.work->wait(timeout_);  // the buffers must outlive the transfers
  for (auto& [t, action] : sends_) (void)t.work->wait(timeout_);
  for (auto& [t, ack] : ack_receives_) (void)t.work->wait(timeout_);
}

std::vector<float>& PipelineRuntime::buffer(std::map<Key, std::vector<float>>& pool, const PipeAction& a) {
  auto& b = pool[Key{a.micro_batch, a.chunk}];
  b.resize(static_cast<size_t>(message_elements_));
  return b;
}

void* PipelineRuntime::wire(std::map<Key, std::vector<float>>& pool, const PipeAction& a) {
  std::vector<float>& values = buffer(pool, a);
  if (!bf16_wire_) return values.data();
  auto& copy = wire_[&pool][Key{a.micro_batch, a.chunk}];
  copy.resize(values.size());
  return copy.data();
}

PipelineRuntime::Transfer PipelineRuntime::transfer(const PipelineLink& link, bool gradients, bool send, void* data,
                                                     int64_t elements, mscDataType_t type) {
  Communicator& comm = gradients ? *link.gradients : *link.activations;
  const auto issued = Clock::now();
  return Transfer{comm.pointToPoint({{send, data, static_cast<size_t>(elements), type, link.peer}}), issued};
}

void PipelineRuntime::wait(const Transfer& transfer, const char* what, const PipeAction& a, int peer, bool data) {
  const auto t0 = Clock::now();
  const Status status = transfer.work->wait(timeout_);
  if (timeline_ != nullptr && !data) timeline_->waitSpan(Wait::kPipeline, t0, Clock::now());
  if (timeline_ != nullptr && data) {
    timeline_->waitSpan(Wait::kPipeline, t0, Clock::now());
    const std::string name = std::string(what) + " " + std::to_string(a.micro_batch) + "." + std::to_string(a.chunk);
    timeline_->communicationSpan(Wait::kPipeline, name, transfer.issued, transfer.work->finishedAt(), messageBytes());
  }
  if (!status.isOk()) throw transferError(status.code(), what, a, peer, status.message());
}

// The trace's arrows for a micro-batch: into this compute from the stage that sent its input, out of it to
// the stage its output goes to (forward: the next virtual stage; backward: the previous one).
void PipelineRuntime::traceFlows(const PipeAction& a, bool backward, bool first, bool last, Clock::time_point start,
                                 Clock::time_point end) {
  const int stage = virtualStage(shape_, groups_.me.pp(), a.chunk);
  const std::string name = std::string(backward ? "backward " : "forward ") + std::to_string(a.micro_batch);
  const auto key = [&](int from) { return pipelineFlowKey(a.micro_batch, from, backward, groups_.me.tp(), groups_.me.dp()); };
  const auto inside = std::chrono::microseconds(1);
  const bool receives = backward ? !last : !first, sends = backward ? !first : !last;
  if (receives) timeline_->flowIn(name, key(backward ? stage + 1 : stage - 1), std::min(start + inside, end));
  if (sends) timeline_->flowOut(name, key(stage), std::max(end - inside, start));
}

Error PipelineRuntime::transferError(ErrorCode code, const char* what, const PipeAction& a, int peer,
                                     const std::string& cause) const {
  return Error(code, std::string("pipeline ") + what + " of micro-batch " + std::to_string(a.micro_batch) +
                         " chunk " + std::to_string(a.chunk) + " (world rank " + std::to_string(groups_.world->rank()) +
                         ", peer world rank " + std::to_string(peer) + "): " + cause);
}

std::optional<PipelineRuntime::Transfer> PipelineRuntime::takeReceive(PipeOp op, const PipeAction& a) {
  auto it = receives_.find({static_cast<int>(op), a.micro_batch, a.chunk});
  if (it == receives_.end()) return std::nullopt;
  Transfer t = it->second;
  receives_.erase(it);
  return t;
}

void PipelineRuntime::acknowledge(const PipelineLink& link, bool gradients) {
  Transfer t = transfer(link, gradients, true, &ack_out_, 1);
  const Status status = t.work->wait(timeout_);
  if (!status.isOk()) {
    throw Error(status.code(), "pipeline acknowledgement to peer world rank " + std::to_string(link.peer_global) +
                                   " (world rank " + std::to_string(groups_.world->rank()) + "): " + status.message());
  }
}

void PipelineRuntime::post(PipeOp op, const PipeAction& a) {
  const bool gradient = op == PipeOp::kRecvGradient;
  auto& pool = gradient ? gradients_in_ : activations_in_;
  receives_[{static_cast<int>(op), a.micro_batch, a.chunk}] =
      transfer(inputLink(gradient), gradient, false, wire(pool, a), message_elements_, wireType());
}

void PipelineRuntime::takeArrivedInputs(size_t position, std::optional<PipeOp> awaiting) {
  // Each input link is a FIFO: walk its receives in schedule order, taking and acknowledging every one that has
  // arrived, up to the first that has not. Taking only the next one deadlocks when a neighbour sends several
  // messages before it waits for one of ours (interleaved 1F1B in groups larger than P). The link of an input
  // still awaited is left alone: a receive posted behind it would hold up its acknowledgement, which travels
  // on the same link after it.
  bool want_activation = awaiting != PipeOp::kRecvActivation, want_gradient = awaiting != PipeOp::kRecvGradient;
  for (size_t i = position + 1; i < schedule_.size() && (want_activation || want_gradient); ++i) {
    const PipeAction& a = schedule_[i];
    PipeOp op;
    if (want_activation && a.op == PipeOp::kForward && !isFirstStage(shape_, groups_.me.pp(), a.chunk)) {
      op = PipeOp::kRecvActivation;
    } else if (want_gradient && a.op == PipeOp::kBackward && !isLastStage(shape_, groups_.me.pp(), a.chunk)) {
      op = PipeOp::kRecvGradient;
    } else {
      continue;
    }
    const bool gradient = op == PipeOp::kRecvGradient;
    const std::tuple<int, int, int> key{static_cast<int>(op), a.micro_batch, a.chunk};
    if (!receives_.count(key)) post(op, a);
    Transfer& t = receives_[key];
    if (t.acknowledged) continue;
    if (t.work->test() && t.work->status().isOk()) {
      acknowledge(inputLink(gradient), gradient);
      t.acknowledged = true;
      continue;
    }
    (gradient ? want_gradient : want_activation) = false;
  }
}

void PipelineRuntime::waitDelivered(size_t position) {
  const auto link_of = [&](const PipeAction& a) -> const PipelineLink& {
    return outputLink(a.op == PipeOp::kSendGradient);
  };
  const auto what = [](const PipeAction& a) {
    return a.op == PipeOp::kSendGradient ? "send of a gradient" : "send of an activation";
  };
  if (!overlap_) {
    for (auto& [t, action] : sends_) {
      auto ack = std::make_unique<float>(0.0f);
      Transfer receive = transfer(link_of(action), action.op == PipeOp::kSendGradient, false, ack.get(), 1);
      ack_receives_.emplace_back(std::move(receive), std::move(ack));
    }
    const auto t0 = Clock::now();
    for (size_t i = 0; i < sends_.size();) {
      const Work& data = *sends_[i].first.work;
      const Work& ack = *ack_receives_[i].first.work;
      if ((data.test() && !data.status().isOk()) || (ack.test() && !ack.status().isOk())) break;  // thrown below
      if (data.test() && ack.test()) {
        ++i;
        continue;
      }
      takeArrivedInputs(position);
      if (Clock::now() - t0 > timeout_) {
        const PipeAction& a = sends_[i].second;
        throw transferError(ErrorCode::kTimeout, what(a), a, link_of(a).peer_global,
                            "not acknowledged by its receiver after " + std::to_string(timeout_.count()) + " ms");
      }
      (void)(data.test() ? ack : data).wait(std::chrono::milliseconds(1));
    }
    if (timeline_ != nullptr) timeline_->waitSpan(Wait::kPipeline, t0, Clock::now());
  }
  for (size_t i = 0; i < sends_.size(); ++i) {
    const auto& [t, action] = sends_[i];
    wait(t, what(action), action, link_of(action).peer_global);
    if (!overlap_) wait(ack_receives_[i].first, what(action), action, link_of(action).peer_global, false);
  }
  sends_.clear();
  ack_receives_.clear();
}

double PipelineRuntime::run(const std::function<MicroBatchTokens(int)>& micro_batch, float loss_scale,
                            ZeroOptimizer* zero) {
  const int rank = groups_.me.pp();
  double loss = 0;
  // A compute's input: posted earlier (overlap, or while this rank waited for its sends) or now, and waited
  // for; with overlap off, acknowledged and this rank's sends then delivered before it computes.
  const auto input = [&](PipeOp op, const PipeAction& a, size_t position) -> float* {
    const bool gradient = op == PipeOp::kRecvGradient;
    auto t = takeReceive(op, a);
    if (!t) {
      post(op, a);
      t = takeReceive(op, a);
    }
    const PipelineLink& link = inputLink(gradient);
    if (!overlap_) {
      // Meanwhile take the inputs after this one: the peer may wait for our acknowledgement of one of them
      // before it sends the one we wait for.
      const auto t0 = Clock::now();
      while (!t->work->test() && Clock::now() - t0 < timeout_) {
        takeArrivedInputs(position, op);
        (void)t->work->wait(std::chrono::milliseconds(1));
      }
      if (timeline_ != nullptr) timeline_->waitSpan(Wait::kPipeline, t0, Clock::now());
    }
    wait(*t, gradient ? "receive of a gradient" : "receive of an activation", a, link.peer_global);
    if (!overlap_) {
      if (!t->acknowledged) acknowledge(link, gradient);
      waitDelivered(position);
    }
    auto& pool = gradient ? gradients_in_ : activations_in_;
    std::vector<float>& values = buffer(pool, a);
    if (bf16_wire_) convertFromBf16(values.data(), static_cast<const bf16*>(wire(pool, a)), message_elements_);
    return values.data();
  };
  const auto send = [&](bool gradient, const PipeAction& a) {
    auto& pool = gradient ? gradients_out_ : activations_out_;
    void* bytes = wire(pool, a);
    if (bf16_wire_) convertToBf16(static_cast<bf16*>(bytes), buffer(pool, a).data(), message_elements_);
    sends_.emplace_back(transfer(outputLink(gradient), gradient, true, bytes, message_elements_, wireType()), a);
  };

  for (size_t position = 0; position < schedule_.size(); ++position) {
    const PipeAction& a = schedule_[position];
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
        if (!first) in.activations = input(PipeOp::kRecvActivation, a, position);
        else if (!overlap_) waitDelivered(position);
        const auto t0 = Clock::now();
        loss += chunk.forwardStage(a.micro_batch, in, last ? nullptr : buffer(activations_out_, a).data());
        if (timeline_ != nullptr) {
          timeline_->computeSpan(describe({a}), t0, Clock::now(), false);
          traceFlows(a, false, first, last, t0, Clock::now());
        }
        break;
      }
      case PipeOp::kBackward: {
        const float* output_grad = last ? nullptr : input(PipeOp::kRecvGradient, a, position);
        if (last && !overlap_) waitDelivered(position);
        if (zero != nullptr) zero->setFinalBackward(a.micro_batch == shape_.micro_batches - 1);
        const auto t0 = Clock::now();
        chunk.backwardStage(a.micro_batch, output_grad, first ? nullptr : buffer(gradients_out_, a).data());
        if (timeline_ != nullptr) {
          timeline_->computeSpan(describe({a}), t0, Clock::now(), true);
          traceFlows(a, true, first, last, t0, Clock::now());
        }
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
  waitDelivered(schedule_.size());
  return loss;
}

}  // namespace megascale::trainer
