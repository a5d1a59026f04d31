// All-reduce on one host. Every path gives all ranks the same bits: one-shot reduces in rank order on every
// rank; slot rounds and cross-memory attach compute each element on exactly one rank, which the others copy.
#include <cstring>

#include "collectives/dtype.h"
#include "collectives/kernels/stream_copy.h"
#include "collectives/node/node_engine.h"
#include "collectives/reduce_kernels.h"

namespace megascale::node {

Status NodeEngine::allReduce(const NodeCall& call) {
  size_t es = dtypeSize(call.type);
  size_t bytes = call.count * es;
  Quick quick = quickPath(call);
  if (quick == Quick::kCombining) return allReduceCombining(call);
  if (quick == Quick::kOneShot) return allReduceOneShot(call);
  if (cma_ && bytes >= options_.cma_min) return allReduceCrossMemory(call);
  return inRounds(call, options_.slot_bytes / es, &NodeEngine::allReduceRound);
}

// Small payloads: latency is two cache-line hand-offs, so every rank reads all n slots and reduces them itself.
Status NodeEngine::allReduceOneShot(const NodeCall& call) { return allReduceOneShotFinish(call, allReduceOneShotPost(call)); }

uint64_t NodeEngine::allReduceOneShotPost(const NodeCall& call) {
  uint64_t seq = ++seq_;
  size_t bytes = call.count * dtypeSize(call.type);
  if (bytes > 0) std::memcpy(own_->slot(seq), call.in, bytes);
  post(seq, call.tag, bytes, nullptr, nullptr);
  return seq;
}

Status NodeEngine::allReduceOneShotFinish(const NodeCall& call, uint64_t seq) {
  size_t bytes = call.count * dtypeSize(call.type);
  uint8_t* mine = own_->slot(seq);
  MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kPosted, call, bytes, true));
  auto source = [&](int q) -> const void* {
    if (q == rank_) return call.in == call.out ? mine : call.in;
    return peers_[q]->slot(seq);
  };
  reduceElements(call.type, call.op, call.out, source(0), source(1), call.count);
  for (int q = 2; q < nranks_; ++q) reduceElements(call.type, call.op, call.out, call.out, source(q), call.count);
  if (call.op == mscAvg) finishAverage(call.type, call.out, call.count, nranks_);
  return Status::ok();
}

// Small payloads with more ranks than cores: a rank that reads all n slots holds a core the others need, and
// the cache misses add up. Instead each rank stages its input and counts itself in; the last to arrive reduces
// once into rank 0's result buffer and releases it; the others copy the result when they next run.
Status NodeEngine::allReduceCombining(const NodeCall& call) {
  return allReduceCombiningFinish(call, allReduceCombiningArrive(call));
}

uint64_t NodeEngine::allReduceCombiningArrive(const NodeCall& call) {
  uint64_t seq = ++seq_;
  uint64_t round = ++combining_rounds_;
  size_t bytes = call.count * dtypeSize(call.type);
  if (bytes > 0) std::memcpy(own_->slot(seq), call.in, bytes);
  headers_[rank_]->descriptor[seq & 1] = OpDescriptor{call.tag, 0, bytes, 0, 0};
  RegionHeader* root = headers_[0];
  const Region& root_region = regionOf(0);
  uint64_t arrived = root->arrivals.fetch_add(1, std::memory_order_acq_rel) + 1;
  if (arrived == round * static_cast<uint64_t>(nranks_)) {
    bool agree = true;
    for (int q = 0; q < nranks_; ++q) {
      const OpDescriptor& d = headers_[q]->descriptor[seq & 1];
      agree = agree && d.tag == call.tag && d.bytes == bytes;
    }
    if (agree) {
      auto source = [&](int q) { return regionOf(q).slot(seq); };
      uint8_t* result = root_region.result(round);
      reduceElements(call.type, call.op, result, source(0), source(1), call.count);
      for (int q = 2; q < nranks_; ++q) reduceElements(call.type, call.op, result, result, source(q), call.count);
      if (call.op == mscAvg) finishAverage(call.type, result, call.count, nranks_);
    } else {
      root->result_mismatch = round;
    }
    root->result_seq.store(round, std::memory_order_seq_cst);
    wakeSleepingPeers();
  }
  return round;
}

Status NodeEngine::allReduceCombiningFinish(const NodeCall& call, uint64_t round) {
  size_t bytes = call.count * dtypeSize(call.type);
  RegionHeader* root = headers_[0];
  const Region& root_region = regionOf(0);
  MSC_RETURN_IF_ERROR(awaitPeer(-1, root->result_seq, round, call, "combined result"));
  if (root->result_mismatch == round) {
    return fail(call, ErrorCode::kMismatch,
                "ranks called different operations (count, type, op or order differ between ranks)");
  }
  if (bytes > 0) std::memcpy(call.out, root_region.result(round), bytes);
  return Status::ok();
}

// One round of at most a slot: stage the input, reduce this rank's part across all slots into its own slot,
// then copy every rank's reduced part out. Each rank reads 2x and writes 2x the round, whatever n is.
Status NodeEngine::allReduceRound(const NodeCall& call, size_t offset, size_t count) {
  uint64_t seq = ++seq_;
  size_t es = dtypeSize(call.type);
  size_t bytes = count * es;
  const uint8_t* in = static_cast<const uint8_t*>(call.in) + offset * es;
  uint8_t* out = static_cast<uint8_t*>(call.out) + offset * es;
  uint8_t* mine = own_->slot(seq);
  std::memcpy(mine, in, bytes);
  post(seq, call.tag, bytes, nullptr, nullptr);
  MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kPosted, call, bytes, true));
  size_t lo, n;
  part(count, rank_, &lo, &n);
  uint8_t* reduced = mine + lo * es;  // only this rank reads its own part of its slot, so it reduces in place
  for (int i = 1; i < nranks_; ++i) {
    int q = (rank_ + i) % nranks_;
    reduceElements(call.type, call.op, reduced, reduced, peers_[q]->slot(seq) + lo * es, n);
  }
  if (call.op == mscAvg) finishAverage(call.type, reduced, n, nranks_);
  publish(stageOf(seq, Stage::kReduced));
  MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kReduced, call, bytes, false));
  for (int q = 0; q < nranks_; ++q) {
    part(count, q, &lo, &n);
    const uint8_t* from = regionOf(q).slot(seq) + lo * es;
    std::memcpy(out + lo * es, from, n * es);
  }
  return Status::ok();
}

// Large payloads: each rank reads its part of every peer's input straight from the peer's buffer, reduces it
// in L2, and writes the result into its own output and every peer's (process_vm_writev), or (see push) peers
// read it after a barrier. Bytes crossing between processes per rank: (n-1)/n of the input twice; no
// staging copy. Writing saves a pass and a barrier: the result is still in cache when it is sent.
// In place, the part a rank writes into a peer's buffer is one only that rank reads, and it has read it.
Status NodeEngine::allReduceCrossMemory(const NodeCall& call) {
  uint64_t seq = ++seq_;
  size_t es = dtypeSize(call.type);
  size_t bytes = call.count * es;
  uint8_t* out = static_cast<uint8_t*>(call.out);
  post(seq, call.tag, bytes, call.in, call.out);
  MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kPosted, call, bytes, true));
  size_t lo, n;
  part(call.count, rank_, &lo, &n);
  // Measured on 2 cores: pushing wins for 2 ranks and in place (the destination lines are cached); with more
  // ranks out of place, peers' writes into cold output lines cost more than pulling after a barrier.
  bool push = nranks_ == 2 || call.in == call.out;
  MSC_RETURN_IF_ERROR(reduceCrossMemory(call, seq, lo, n, out + lo * es, push));
  if (!push) {
    publish(stageOf(seq, Stage::kReduced));
    MSC_RETURN_IF_ERROR(awaitAll(seq, Stage::kReduced, call, bytes, false));
    for (int i = 1; i < nranks_; ++i) {
      int q = (rank_ + i) % nranks_;
      part(call.count, q, &lo, &n);
      MSC_RETURN_IF_ERROR(pull(call, q, out + lo * es, headers_[q]->descriptor[seq & 1].out_addr + lo * es, n * es));
    }
  }
  // Peers read this rank's buffers (and may write their parts into its output) until they are done.
  publish(stageOf(seq, Stage::kDone));
  return awaitAll(seq, Stage::kDone, call, bytes, false);
}

bool NodeEngine::streams(const NodeCall& call, size_t bytes) const {
  // In place, the destination lines were just read, so they are in cache and a plain store costs no extra read.
  return bytes >= options_.stream_min && call.in != call.out;
}

Status NodeEngine::pull(const NodeCall& call, int peer, uint8_t* dst, uint64_t remote, size_t bytes) {
  // Straight into place: streaming through a cache-sized chunk instead measured slower here (the extra copy
  // costs more than the kernel's destination reads save).
  Status s = peers_[peer]->readOwnerMemory(dst, remote, bytes);
  return s.isOk() ? s : fail(call, s.code(), s.message());
}

// dst[0, count) = reduction over ranks of input elements [first, first + count), this rank's first. Peers'
// elements are pulled in chunks that stay in L2 with their partner; the chunk is reduced there and, for
// outputs larger than the cache, streamed out with non-temporal stores (no read of the destination lines).
Status NodeEngine::reduceCrossMemory(const NodeCall& call, uint64_t seq, size_t first, size_t count, uint8_t* dst,
                                     bool to_peers) {
  size_t es = dtypeSize(call.type);
  size_t chunk = options_.chunk_bytes / es;
  bool stream = streams(call, count * es);
  bool staged = stream || to_peers;  // reduce into the L2 accumulator, then copy it out
  uint8_t* acc = chunk_.get();
  uint8_t* pulled = chunk_.get() + options_.chunk_bytes;
  const uint8_t* own = static_cast<const uint8_t*>(call.in) + first * es;
  for (size_t c = 0; c < count; c += chunk) {
    size_t m = std::min(chunk, count - c);
    uint8_t* d = staged ? acc : dst + c * es;
    for (int i = 1; i < nranks_; ++i) {
      int q = (rank_ + i) % nranks_;
      uint64_t remote = headers_[q]->descriptor[seq & 1].in_addr + (first + c) * es;
      Status s = peers_[q]->readOwnerMemory(pulled, remote, m * es);
      if (!s.isOk()) return fail(call, s.code(), s.message());
      reduceElements(call.type, call.op, d, i == 1 ? own + c * es : d, pulled, m);
    }
    if (call.op == mscAvg) finishAverage(call.type, d, m, nranks_);
    if (stream) {
      kernels::streamCopy(dst + c * es, acc, m * es);
    } else if (staged) {
      std::memcpy(dst + c * es, acc, m * es);
    }
    for (int i = 1; to_peers && i < nranks_; ++i) {
      int q = (rank_ + i) % nranks_;
      Status s = peers_[q]->writeOwnerMemory(acc, headers_[q]->descriptor[seq & 1].out_addr + (first + c) * es, m * es);
      if (!s.isOk()) return fail(call, s.code(), s.message());
    }
  }
  return Status::ok();
}

}  // namespace megascale::node
