// Starting operations on the caller's thread (begin) and finishing them anywhere (resume). Only single-round
// operations start inline: their first half (stage and post) never waits, and their second half waits only
// for peers' posts, so a caller that finds peers slow hands the second half to the communicator's worker.
#include <sched.h>

#include <chrono>

#include "collectives/dtype.h"
#include "collectives/node/node_engine.h"

namespace megascale::node {

NodeEngine::Quick NodeEngine::quickPath(const NodeCall& call) const {
  size_t bytes = call.count * dtypeSize(call.type);
  size_t all = bytes * static_cast<size_t>(nranks_);
  switch (call.collective) {
    case Collective::kAllReduce:
      // One-shot makes every rank read all peers' inputs: bound what each rank reads, not the message.
      if (bytes * static_cast<size_t>(nranks_ - 1) > options_.one_shot_max || bytes > options_.slot_bytes) {
        return Quick::kNone;
      }
      return combine_small_ && bytes <= kResultBytes ? Quick::kCombining : Quick::kOneShot;
    case Collective::kAllGather:
      return bytes <= options_.slot_bytes && all < options_.cma_min_gather ? Quick::kGather : Quick::kNone;
    case Collective::kReduceScatter:
      return all <= options_.slot_bytes && all < options_.cma_min_gather ? Quick::kScatter : Quick::kNone;
    default:
      return Quick::kNone;
  }
}

template <typename Ready>
bool NodeEngine::settlesSoon(Ready ready) const {
  if (ready()) return true;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 1;; ++i) {
    if (oversubscribed_) {
      sched_yield();
    } else {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (ready()) return true;
    if ((i & 63) == 0 && std::chrono::steady_clock::now() - start > options_.spin) return false;
  }
}

Status NodeEngine::begin(const NodeCall& call, bool* done) {
  *done = false;
  pending_ = Quick::kNone;
  if (!connected_ || nranks_ == 1) return Status::ok();  // connecting may wait long: resume() does it all
  pending_ = quickPath(call);
  switch (pending_) {
    case Quick::kOneShot:
      pending_seq_ = allReduceOneShotPost(call);
      break;
    case Quick::kCombining:
      pending_seq_ = allReduceCombiningArrive(call);
      break;
    case Quick::kGather:
      pending_seq_ = allGatherPost(call, 0, call.count);
      break;
    case Quick::kScatter:
      pending_seq_ = reduceScatterPost(call, 0, call.count);
      break;
    case Quick::kNone:
      return Status::ok();
  }
  bool ready;
  if (pending_ == Quick::kCombining) {
    const std::atomic<uint64_t>& result = headers_[0]->result_seq;
    ready = settlesSoon([&] { return result.load(std::memory_order_acquire) >= pending_seq_; });
  } else {
    uint64_t posted = stageOf(pending_seq_, Stage::kPosted);
    ready = settlesSoon([&] {
      for (int q = 0; q < nranks_; ++q) {
        if (headers_[q]->stage.load(std::memory_order_acquire) < posted) return false;
      }
      return true;
    });
  }
  if (!ready) return Status::ok();
  *done = true;
  return resume(call);
}

Status NodeEngine::resume(const NodeCall& call) {
  Quick started = pending_;
  pending_ = Quick::kNone;
  switch (started) {
    case Quick::kOneShot:
      return allReduceOneShotFinish(call, pending_seq_);
    case Quick::kCombining:
      return allReduceCombiningFinish(call, pending_seq_);
    case Quick::kGather:
      return allGatherFinish(call, pending_seq_, 0, call.count);
    case Quick::kScatter:
      return reduceScatterFinish(call, pending_seq_, 0, call.count);
    case Quick::kNone:
      break;
  }
  return run(call);
}

}  // namespace megascale::node
