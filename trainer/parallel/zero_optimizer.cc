#include "trainer/parallel/zero_optimizer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "trainer/kernels/bf16.h"
#include "trainer/kernels/parallel.h"

namespace megascale::trainer {

namespace {

using Clock = std::chrono::steady_clock;

// A chunk holding wte has it at the front of its table (buildParameterTable puts it first).
bool holdsTiedEmbedding(const Gpt<float>& chunk, const ProcessGroups& groups) {
  const auto& table = chunk.parameterTable();
  return groups.embedding && !table.empty() && table.front().name == "wte";
}

}  // namespace

ZeroOptimizer::ZeroOptimizer(const ZeroOptions& options, std::vector<Gpt<float>*> chunks, const ProcessGroups& groups)
    : options_(options), chunks_(std::move(chunks)), groups_(groups), dp_size_(groups.dp->size()),
      dp_rank_(groups.dp->rank()) {
  if (options_.bucket_elements < 1) throw std::invalid_argument("the DP bucket size must be at least 1 parameter");
  const bool tensor_parallel = groups.layout.tp() > 1;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const Gpt<float>& chunk = *chunks_[c];
    tensor_base_.push_back(tensor_count_);
    const auto& table = chunk.parameterTable();
    tensor_count_ += static_cast<int>(table.size());
    const bool tied = holdsTiedEmbedding(chunk, groups);
    // The last stage's copy of the tied embedding is a duplicate: counted once in the norm, on the first.
    const bool duplicate_wte = tied && groups.me.pp() != 0;
    // wte alone in a bucket: both stages' copies then shard alike.
    const int64_t wte_end = tied ? table.front().offset + table.front().size() : 0;
    Bucket* open = nullptr;
    const auto add = [&](int64_t hook_begin, int64_t begin, int64_t end, bool own_bucket) {
      if (own_bucket || open == nullptr || open->elements >= options_.bucket_elements || open->tied_embedding) {
        buckets_.emplace_back();
        open = &buckets_.back();
        open->chunk = static_cast<int>(c);
        open->tied_embedding = own_bucket;
      }
      open->ranges.push_back(Range{begin, end, open->elements});
      open->elements += end - begin;
      buckets_of_[{static_cast<int>(c), hook_begin}].push_back(buckets_.size() - 1);
    };
    for (const auto& range : chunk.gradientOrder()) {
      if (tied && range.begin == 0) {
        add(range.begin, 0, wte_end, true);
        if (range.end > wte_end) add(range.begin, wte_end, range.end, false);
      } else {
        add(range.begin, range.begin, range.end, false);
      }
    }
    for (size_t b = 0; b < buckets_.size(); ++b) {
      Bucket& bucket = buckets_[b];
      if (bucket.chunk != static_cast<int>(c) || bucket.shard > 0) continue;
      bucket.shard = (bucket.elements + dp_size_ - 1) / dp_size_;
      const auto whole = static_cast<size_t>(bucket.shard * dp_size_);
      bucket.buffer.assign(bf16Wire() ? static_cast<size_t>(bucket.shard) : whole, 0.0f);
      if (bf16Wire()) bucket.half.assign(whole, 0);
      const int64_t lo = dp_rank_ * bucket.shard, hi = lo + bucket.shard;
      for (const Range& r : bucket.ranges) {
        for (size_t t = 0; t < table.size(); ++t) {
          const ParamSpec& spec = table[t];
          const int64_t begin = std::max(r.begin, spec.offset), end = std::min(r.end, spec.offset + spec.size());
          if (begin >= end) continue;
          const int64_t packed_begin = std::max(lo, r.packed + (begin - r.begin));
          const int64_t packed_end = std::min(hi, r.packed + (end - r.begin));
          if (packed_begin >= packed_end) continue;
          const bool replicated = spec.layout.shard_dim < 0;
          const bool counted = !(replicated && tensor_parallel && groups.me.tp() != 0) && !(duplicate_wte && spec.name == "wte");
          bucket.pieces.push_back(TensorPiece{tensor_base_.back() + static_cast<int>(t), packed_begin - lo,
                                              r.begin + (packed_begin - r.packed), packed_end - packed_begin,
                                              spec.weight_decay, replicated && tensor_parallel, counted});
        }
      }
    }
  }
  // The next step's forwards read chunk 0 first (interleaved 1F1B runs its first micro-batches through chunk
  // 0 before chunk 1), each chunk's buckets in the reverse of their gradient order.
  for (size_t c = 0; c < chunks_.size(); ++c) {
    for (size_t i = buckets_.size(); i-- > 0;) {
      if (buckets_[i].chunk == static_cast<int>(c)) forward_order_.push_back(i);
    }
  }
  reloadMasterWeights();
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const int chunk = static_cast<int>(c);
    chunks_[c]->setParameterHooks([this, chunk](Gpt<float>::ParamRange r) { ensureParameters(chunk, r); },
                                  [this, chunk](Gpt<float>::ParamRange r) {
                                    if (final_backward_) rangeDone(chunk, r);
                                  });
  }
  for (Bucket& b : buckets_) b.pending = static_cast<int>(b.ranges.size());
}

ZeroOptimizer::~ZeroOptimizer() {
  for (Gpt<float>* chunk : chunks_) chunk->setParameterHooks(nullptr, nullptr);
  for (Bucket& b : buckets_) {  // the communicator still reads these buffers: let the operations land
    if (b.tied) (void)b.tied->wait(options_.timeout);
    if (b.reduce) (void)b.reduce->wait(options_.timeout);
    if (b.gather) (void)b.gather->wait(options_.timeout);
  }
}

void ZeroOptimizer::reloadMasterWeights() {
  for (Bucket& b : buckets_) {
    b.master.assign(static_cast<size_t>(b.shard), 0.0f);
    if (b.m.empty()) {
      b.m.assign(static_cast<size_t>(b.shard), 0.0f);
      b.v.assign(static_cast<size_t>(b.shard), 0.0f);
    }
    const float* params = chunks_[static_cast<size_t>(b.chunk)]->parameters();
    for (const TensorPiece& p : b.pieces) {
      std::copy(params + p.param_offset, params + p.param_offset + p.length, b.master.begin() + p.shard_offset);
    }
  }
  if (bf16Wire()) roundParameters();
}

void ZeroOptimizer::roundParameters() {
  for (Bucket& b : buckets_) {
    Gpt<float>& chunk = *chunks_[static_cast<size_t>(b.chunk)];
    for (const Range& r : b.ranges) {
      float* params = chunk.parameters();
      for (int64_t i = r.begin; i < r.end; ++i) params[i] = fromBf16(toBf16(params[i]));
      chunk.refreshRoundedWeights(Gpt<float>::ParamRange{r.begin, r.end});
    }
  }
}

void ZeroOptimizer::gatherShards(std::vector<float> Bucket::*field, std::vector<std::vector<float>>& out) {
  out.assign(chunks_.size(), {});
  for (size_t c = 0; c < chunks_.size(); ++c) out[c].assign(static_cast<size_t>(chunks_[c]->parameterCount()), 0.0f);
  std::vector<float> whole;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    const std::vector<float>& shard = b.*field;
    whole.assign(static_cast<size_t>(b.shard * dp_size_), 0.0f);
    if (dp_size_ > 1) {
      waitFor(groups_.dp->allGather(shard.data(), whole.data(), static_cast<size_t>(b.shard), mscFloat32),
              "optimizer-state all-gather", i);
    } else {
      std::copy(shard.begin(), shard.end(), whole.begin());
    }
    std::vector<float>& flat = out[static_cast<size_t>(b.chunk)];
    for (const Range& r : b.ranges) {
      std::copy(whole.begin() + r.packed, whole.begin() + r.packed + (r.end - r.begin), flat.begin() + r.begin);
    }
  }
}

void ZeroOptimizer::gatherMoments(std::vector<std::vector<float>>& m, std::vector<std::vector<float>>& v) {
  gatherShards(&Bucket::m, m);
  gatherShards(&Bucket::v, v);
}

void ZeroOptimizer::gatherMasterWeights(std::vector<std::vector<float>>& params) {
  gatherShards(&Bucket::master, params);
}

void ZeroOptimizer::setMoments(const std::vector<std::vector<float>>& m, const std::vector<std::vector<float>>& v) {
  for (Bucket& b : buckets_) {
    const auto& m_flat = m.at(static_cast<size_t>(b.chunk));
    const auto& v_flat = v.at(static_cast<size_t>(b.chunk));
    for (const TensorPiece& p : b.pieces) {
      std::copy(m_flat.begin() + p.param_offset, m_flat.begin() + p.param_offset + p.length,
                b.m.begin() + p.shard_offset);
      std::copy(v_flat.begin() + p.param_offset, v_flat.begin() + p.param_offset + p.length,
                b.v.begin() + p.shard_offset);
    }
  }
}

int64_t ZeroOptimizer::optimizerStateBytes() const {
  int64_t bytes = 0;
  for (const Bucket& b : buckets_) bytes += static_cast<int64_t>((b.m.size() + b.v.size()) * sizeof(float));
  return bytes;
}

int64_t ZeroOptimizer::masterWeightBytes() const {
  int64_t bytes = 0;
  for (const Bucket& b : buckets_) bytes += static_cast<int64_t>(b.master.size() * sizeof(float));
  return bytes;
}

void ZeroOptimizer::waitFor(const std::shared_ptr<Work>& work, const char* what, size_t bucket,
                            std::chrono::steady_clock::time_point issued, int64_t bytes) {
  if (!work) return;
  const auto t0 = Clock::now();
  const Status status = work->wait(options_.timeout);
  if (timeline_ != nullptr) {
    timeline_->waitSpan(Wait::kDataParallel, t0, Clock::now());
    if (bytes > 0) {
      timeline_->communicationSpan(Wait::kDataParallel, std::string(what) + " " + std::to_string(bucket), issued,
                                   work->finishedAt(), bytes);
    }
  }
  if (!status.isOk()) {
    throw Error(status.code(), std::string("data-parallel ") + what + " of bucket " + std::to_string(bucket) +
                                   " (rank " + std::to_string(dp_rank_) + " of " + std::to_string(dp_size_) +
                                   " in its DP group, world rank " + std::to_string(groups_.world->rank()) +
                                   "): " + status.message());
  }
}

void ZeroOptimizer::rangeDone(int chunk, Gpt<float>::ParamRange range) {
  auto it = buckets_of_.find({chunk, range.begin});
  if (it == buckets_of_.end()) return;
  for (const size_t i : it->second) {
    Bucket& b = buckets_[i];
    if (--b.pending == 0 && options_.overlap) launchReduce(b);
  }
}

void ZeroOptimizer::launchReduce(Bucket& b) {
  const float* grads = chunks_[static_cast<size_t>(b.chunk)]->gradients();
  b.reducing = true;
  if (bf16Wire()) {  // packed straight into the bf16 buffer (the float one is this rank's shard only)
    for (const Range& r : b.ranges) convertToBf16(b.half.data() + r.packed, grads + r.begin, r.end - r.begin);
    std::fill(b.half.begin() + b.elements, b.half.end(), uint16_t{0});
  } else {
    for (const Range& r : b.ranges) std::copy(grads + r.begin, grads + r.end, b.buffer.begin() + r.packed);
    std::fill(b.buffer.begin() + b.elements, b.buffer.end(), 0.0f);
  }
  if (dp_size_ == 1) return;
  b.reduce_issued = Clock::now();
  if (bf16Wire()) {
    uint16_t* shard = b.half.data() + dp_rank_ * b.shard;
    b.reduce = groups_.dp->reduceScatter(b.half.data(), shard, static_cast<size_t>(b.shard), mscBfloat16, mscSum);
  } else {
    b.reduce = groups_.dp->reduceScatter(b.buffer.data(), shardOf(b), static_cast<size_t>(b.shard), mscFloat32, mscSum);
  }
}

void ZeroOptimizer::finishReduce(size_t i) {
  Bucket& b = buckets_[i];
  waitFor(b.reduce, "gradient reduce-scatter", i, b.reduce_issued, (dp_size_ - 1) * b.shard * wireBytes());
  if (b.reduce && bf16Wire()) convertFromBf16(shardOf(b), b.half.data() + dp_rank_ * b.shard, b.shard);
  b.reduce.reset();
  b.reducing = false;
  b.pending = static_cast<int>(b.ranges.size());
}

void ZeroOptimizer::sumReplicatedAcrossTensorParallel() {
  if (groups_.layout.tp() == 1) return;
  std::vector<float> packed;
  for (Bucket& b : buckets_) {
    for (const TensorPiece& p : b.pieces) {
      if (p.replicated) packed.insert(packed.end(), shardOf(b) + p.shard_offset, shardOf(b) + p.shard_offset + p.length);
    }
  }
  if (packed.empty()) return;
  const Status status =
      groups_.tp->allReduce(packed.data(), packed.data(), packed.size(), mscFloat32, mscSum)->wait(options_.timeout);
  if (!status.isOk()) {
    throw Error(status.code(), "tensor-parallel all-reduce of replicated gradients (world rank " +
                                   std::to_string(groups_.world->rank()) + "): " + status.message());
  }
  auto from = packed.begin();
  for (Bucket& b : buckets_) {
    for (const TensorPiece& p : b.pieces) {
      if (!p.replicated) continue;
      std::copy(from, from + p.length, shardOf(b) + p.shard_offset);
      from += p.length;
    }
  }
}

double ZeroOptimizer::globalGradientNorm() {
  double sum = 0;
  for (Bucket& b : buckets_) {
    const float* g = shardOf(b);
    for (const TensorPiece& p : b.pieces) {
      if (!p.counted) continue;
      const float* piece = g + p.shard_offset;
      sum += deterministicSum(p.length, [piece](int64_t i) {
        return static_cast<double>(piece[i]) * static_cast<double>(piece[i]);
      });
    }
  }
  const Status status = groups_.world->allReduce(&sum, &sum, 1, mscFloat64, mscSum)->wait(options_.timeout);
  if (!status.isOk()) {
    throw Error(status.code(), "gradient-norm all-reduce (world rank " + std::to_string(groups_.world->rank()) +
                                   "): " + status.message());
  }
  return std::sqrt(sum);
}

double ZeroOptimizer::step(double lr) {
  for (Bucket& b : buckets_) {
    if (!b.reducing) launchReduce(b);
  }
  // The tied embedding's shard first: its sum over the first and last stage moves while the other buckets'
  // reduce-scatters finish.
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    if (!b.tied_embedding) continue;
    finishReduce(i);
    b.tied_issued = Clock::now();
    b.tied = groups_.embedding->allReduce(shardOf(b), shardOf(b), static_cast<size_t>(b.shard), mscFloat32, mscSum);
  }
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (!buckets_[i].tied_embedding) finishReduce(i);
  }
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    if (!b.tied) continue;
    waitFor(b.tied, "tied-embedding gradient all-reduce (first and last stage)", i, b.tied_issued,
            b.shard * static_cast<int64_t>(sizeof(float)));
    b.tied.reset();
  }
  sumReplicatedAcrossTensorParallel();

  const OptimizerConfig& config = options_.optimizer;
  const double norm = globalGradientNorm();
  if (config.clip_norm > 0) {
    const double coefficient = config.clip_norm / (norm + 1e-6);
    if (coefficient < 1.0) {
      const auto c = static_cast<float>(coefficient);
      for (Bucket& b : buckets_) {
        for (const TensorPiece& p : b.pieces) {
          float* g = shardOf(b) + p.shard_offset;
          for (int64_t i = 0; i < p.length; ++i) g[i] *= c;
        }
      }
    }
  }

  ++steps_;
  const AdamCoefficients<float> coefficients(config, steps_);
  const auto decayOf = [&](const TensorPiece& p) { return p.decay ? static_cast<float>(config.weight_decay) : 0.0f; };
  std::vector<double> norms;  // LAMB: per tensor, |w|^2 and |update|^2
  if (config.kind == OptimizerKind::kLamb) {
    // LAMB's trust ratio needs each whole tensor's norms: sums over the DP shards, then over the TP shards
    // (replicated tensors once).
    norms.assign(static_cast<size_t>(2 * tensor_count_), 0.0);
    for (Bucket& b : buckets_) {
      for (const TensorPiece& p : b.pieces) {
        const int64_t o = p.shard_offset;
        lambMoments(b.master.data() + o, shardOf(b) + o, b.m.data() + o, b.v.data() + o, p.length, coefficients,
                    decayOf(p), norms[static_cast<size_t>(2 * p.tensor)], norms[static_cast<size_t>(2 * p.tensor + 1)]);
      }
    }
    const auto sum = [&](Communicator& comm, const char* what) {
      const Status s = comm.allReduce(norms.data(), norms.data(), norms.size(), mscFloat64, mscSum)->wait(options_.timeout);
      if (!s.isOk()) throw Error(s.code(), std::string("LAMB norm all-reduce over ") + what + ": " + s.message());
    };
    sum(*groups_.dp, "data parallel");
    if (groups_.layout.tp() > 1) {
      if (groups_.me.tp() != 0) {
        for (Bucket& b : buckets_) {
          for (const TensorPiece& p : b.pieces) {
            if (p.replicated) norms[static_cast<size_t>(2 * p.tensor)] = norms[static_cast<size_t>(2 * p.tensor + 1)] = 0;
          }
        }
      }
      sum(*groups_.tp, "tensor parallel");
    }
  }

  // Buckets in the order the next forward reads them: each one's new parameters start back to every DP rank
  // as soon as it is updated, so the first gathers move while the optimizer still updates the rest. Each
  // gather is waited for by the forward that first reads the bucket.
  for (const size_t i : forward_order_) {
    Bucket& b = buckets_[i];
    for (const TensorPiece& p : b.pieces) {
      const int64_t o = p.shard_offset;
      if (config.kind == OptimizerKind::kAdamW) {
        adamwUpdate(b.master.data() + o, shardOf(b) + o, b.m.data() + o, b.v.data() + o, p.length, coefficients,
                    static_cast<float>(lr), decayOf(p));
      } else {
        const double scale =
            lambScale(lr, norms[static_cast<size_t>(2 * p.tensor)], norms[static_cast<size_t>(2 * p.tensor + 1)]);
        lambApply(b.master.data() + o, b.m.data() + o, b.v.data() + o, p.length, coefficients, decayOf(p),
                  static_cast<float>(scale));
      }
    }
    startGather(b);
  }
  if (!options_.overlap) synchronizeParameters();
  return norm;
}

void ZeroOptimizer::startGather(Bucket& b) {
  for (const TensorPiece& p : b.pieces) {
    std::copy(b.master.begin() + p.shard_offset, b.master.begin() + p.shard_offset + p.length,
              shardOf(b) + p.shard_offset);
  }
  if (dp_size_ > 1) {
    b.gather_issued = Clock::now();
    if (bf16Wire()) {
      uint16_t* shard = b.half.data() + dp_rank_ * b.shard;
      convertToBf16(shard, shardOf(b), b.shard);
      b.gather = groups_.dp->allGather(shard, b.half.data(), static_cast<size_t>(b.shard), mscBfloat16);
    } else {
      b.gather = groups_.dp->allGather(shardOf(b), b.buffer.data(), static_cast<size_t>(b.shard), mscFloat32);
    }
  } else {
    b.gather = nullptr;
    finishGather(b);
  }
}

int64_t ZeroOptimizer::shardStateElements() const {
  int64_t elements = 0;
  for (const Bucket& b : buckets_) elements += 3 * b.shard;
  return elements;
}

std::vector<std::string_view> ZeroOptimizer::shardStateViews() const {
  std::vector<std::string_view> views;
  for (const Bucket& b : buckets_) {
    for (const std::vector<float>* field : {&b.master, &b.m, &b.v}) {
      views.emplace_back(reinterpret_cast<const char*>(field->data()), field->size() * sizeof(float));
    }
  }
  return views;
}

void ZeroOptimizer::restoreShardState(const float* in) {
  for (Bucket& b : buckets_) {
    for (std::vector<float>* field : {&b.master, &b.m, &b.v}) {
      field->assign(in, in + b.shard);
      in += b.shard;
    }
  }
  for (const size_t i : forward_order_) startGather(buckets_[i]);
  synchronizeParameters();
}

void ZeroOptimizer::finishGather(Bucket& b) {
  Gpt<float>& chunk = *chunks_[static_cast<size_t>(b.chunk)];
  float* params = chunk.parameters();
  for (const Range& r : b.ranges) {
    const Gpt<float>::ParamRange range{r.begin, r.end};
    if (bf16Wire()) {  // the values arrived rounded: the GEMMs' bf16 copy takes them as they are
      convertFromBf16(params + r.begin, b.half.data() + r.packed, r.end - r.begin);
      chunk.setRoundedWeights(range, b.half.data() + r.packed);
    } else {
      std::copy(b.buffer.begin() + r.packed, b.buffer.begin() + r.packed + (r.end - r.begin), params + r.begin);
      chunk.refreshRoundedWeights(range);
    }
  }
}

void ZeroOptimizer::ensureParameters(int chunk, Gpt<float>::ParamRange range) {
  auto it = buckets_of_.find({chunk, range.begin});
  if (it == buckets_of_.end()) return;
  for (const size_t i : it->second) {
    Bucket& b = buckets_[i];
    if (!b.gather) continue;
    waitFor(b.gather, "parameter all-gather", i, b.gather_issued, (dp_size_ - 1) * b.shard * wireBytes());
    b.gather.reset();
    finishGather(b);
  }
}

void ZeroOptimizer::synchronizeParameters() {
  for (size_t i = 0; i < buckets_.size(); ++i) {
    Bucket& b = buckets_[i];
    if (!b.gather) continue;
    waitFor(b.gather, "parameter all-gather", i, b.gather_issued,
            (dp_size_ - 1) * b.shard * wireBytes());
    b.gather.reset();
    finishGather(b);
  }
}

}  // namespace megascale::trainer
