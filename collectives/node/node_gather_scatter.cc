// All-gather and reduce-scatter on one host: through slots in rounds, or by cross-memory attach when the
// whole exchange is large (each rank then reads exactly the bytes it needs, straight from the peers' buffers).
#include <cstring>

#include "collectives/dtype.h"
#include "collectives/kernels/stream_copy.h"
#include "collectives/node/node_engine.h"
#include "collectives/reduce_kernels.h"

namespace megascale::node {

Status NodeEngine::allGather(const NodeCall& call) {
  size_t es = dtypeSize(call.type);
  size_t bytes = call.count * es;
  if (cma_ && bytes * static_cast<size_t>(nranks_) >= options_.cma_min_gather) {
    uint64_t seq = ++seq_;
    uint8_t* out = static_cast<uint8_t*>(call.out);
    post(seq, call.tag, bytes, call.in, call.out);
    MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kPosted, call, bytes, true));
    uint8_t* own = out + static_cast<size_t>(rank_) * bytes;
    if (own != call.in && bytes > 0) {  // user buffers may be null when empty
      if (streams(call, bytes)) kernels::streamCopy(own, call.in, bytes);
      else std::memcpy(own, call.in, bytes);
    }
    for (int i = 1; i < nranks_; ++i) {
      int q = (rank_ + i) % nranks_;
      MSC_RETURN_IF_ERROR(pull(call, q, out + static_cast<size_t>(q) * bytes, headers_[q]->descriptor[seq & 1].in_addr, bytes));
    }
    publish(stageOf(seq, Stage::kDone));  // peers may still be reading this rank's input
    return awaitAll(seq, Stage::kDone, call, bytes, false);
  }
  return inRounds(call, options_.slot_bytes / es, &NodeEngine::allGatherRound);
}

Status NodeEngine::allGatherRound(const NodeCall& call, size_t offset, size_t count) {
  return allGatherFinish(call, allGatherPost(call, offset, count), offset, count);
}

uint64_t NodeEngine::allGatherPost(const NodeCall& call, size_t offset, size_t count) {
  uint64_t seq = ++seq_;
  size_t es = dtypeSize(call.type);
  if (count > 0) std::memcpy(own_->slot(seq), static_cast<const uint8_t*>(call.in) + offset * es, count * es);
  post(seq, call.tag, count * es, nullptr, nullptr);
  return seq;
}

Status NodeEngine::allGatherFinish(const NodeCall& call, uint64_t seq, size_t offset, size_t count) {
  size_t es = dtypeSize(call.type);
  size_t bytes = count * es;
  const uint8_t* in = static_cast<const uint8_t*>(call.in) + offset * es;
  uint8_t* out = static_cast<uint8_t*>(call.out);
  MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kPosted, call, bytes, true));
  for (int q = 0; q < nranks_; ++q) {
    uint8_t* to = out + (static_cast<size_t>(q) * call.count + offset) * es;
    const uint8_t* from = q == rank_ ? in : peers_[q]->slot(seq);
    if (to != from && bytes > 0) std::memcpy(to, from, bytes);
  }
  return Status::ok();
}

Status NodeEngine::reduceScatter(const NodeCall& call) {
  size_t es = dtypeSize(call.type);
  size_t bytes = call.count * es;
  if (cma_ && bytes * static_cast<size_t>(nranks_) >= options_.cma_min_gather) {
    uint64_t seq = ++seq_;
    post(seq, call.tag, bytes, call.in, call.out);
    MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kPosted, call, bytes, true));
    MSC_RETURN_IF_ERROR(
        reduceCrossMemory(call, seq, static_cast<size_t>(rank_) * call.count, call.count, static_cast<uint8_t*>(call.out), false));
    publish(stageOf(seq, Stage::kDone));
    return awaitAll(seq, Stage::kDone, call, bytes, false);
  }
  return inRounds(call, options_.slot_bytes / es / static_cast<size_t>(nranks_), &NodeEngine::reduceScatterRound);
}

// A round stages `count` elements of every rank's block (block q at q * count in the slot); rank r then
// reduces block r over all slots, starting from its own input.
Status NodeEngine::reduceScatterRound(const NodeCall& call, size_t offset, size_t count) {
  return reduceScatterFinish(call, reduceScatterPost(call, offset, count), offset, count);
}

uint64_t NodeEngine::reduceScatterPost(const NodeCall& call, size_t offset, size_t count) {
  uint64_t seq = ++seq_;
  size_t es = dtypeSize(call.type);
  size_t bytes = count * es;
  const uint8_t* in = static_cast<const uint8_t*>(call.in);
  uint8_t* mine = own_->slot(seq);
  for (int q = 0; q < nranks_; ++q) {
    if (q != rank_ && bytes > 0) std::memcpy(mine + static_cast<size_t>(q) * bytes, in + (static_cast<size_t>(q) * call.count + offset) * es, bytes);
  }
  post(seq, call.tag, bytes, nullptr, nullptr);
  return seq;
}

Status NodeEngine::reduceScatterFinish(const NodeCall& call, uint64_t seq, size_t offset, size_t count) {
  size_t es = dtypeSize(call.type);
  size_t bytes = count * es;
  const uint8_t* in = static_cast<const uint8_t*>(call.in);
  MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kPosted, call, bytes, true));
  uint8_t* dst = static_cast<uint8_t*>(call.out) + offset * es;
  const uint8_t* own = in + (static_cast<size_t>(rank_) * call.count + offset) * es;
  for (int i = 1; i < nranks_; ++i) {
    int q = (rank_ + i) % nranks_;
    reduceElements(call.type, call.op, dst, i == 1 ? own : dst, peers_[q]->slot(seq) + static_cast<size_t>(rank_) * bytes,
                   count);
  }
  if (call.op == mscAvg) finishAverage(call.type, dst, count, nranks_);
  return Status::ok();
}

}  // namespace megascale::node
