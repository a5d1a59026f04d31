#include "trainer/model/gpt.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "trainer/kernels/gemm_bf16.h"
#include "trainer/model/random.h"

namespace megascale::trainer {

namespace {

uint64_t nameHash(const std::string& name) {  // FNV-1a: fixed on every platform, unlike std::hash
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

template <typename T>
Gpt<T>::Gpt(const ModelConfig& config, const ModelSlice& slice, RowSharding* tp)
    : config_(config), slice_(slice), tp_(tp), table_(buildParameterTable(config, slice)) {
  if (slice.tp_size > 1) {
    if constexpr (!std::is_same_v<T, float>) {
      throw std::invalid_argument("tensor parallelism runs float models only");
    }
    if (tp == nullptr || tp->size() != slice.tp_size || tp->rank() != slice.tp_rank) {
      throw std::invalid_argument("a slice with tensor parallelism " + std::to_string(slice.tp_size) +
                                  " needs its tensor-parallel group (rank " + std::to_string(slice.tp_rank) + ")");
    }
  }
  const int64_t count = trainer::parameterCount(table_);
  params_.assign(static_cast<size_t>(count), T(0));
  grads_.assign(static_cast<size_t>(count), T(0));
  bindParameters(params_.data(), table_, config_, slice_, p_, lp_);
  bindParameters(grads_.data(), table_, config_, slice_, g_, lg_);
  for (size_t l = 0; l < lp_.size(); ++l) layer_ranges_.push_back(layerRanges(static_cast<int64_t>(l)));
}

template <typename T>
void Gpt<T>::initialize(uint64_t seed) {
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config_.layers));
  std::vector<T> whole;
  for (const auto& spec : table_) {
    // Each tensor is drawn whole from its own stream (seed, name), then this slice's part is kept: every
    // layout starts from the same weights.
    whole.assign(static_cast<size_t>(globalSize(spec)), T(0));
    const bool is_norm = spec.name.find("ln") != std::string::npos;
    const bool is_bias = spec.name.size() > 5 && spec.name.compare(spec.name.size() - 5, 5, ".bias") == 0;
    if (is_norm && !is_bias) {
      std::fill(whole.begin(), whole.end(), T(1));
    } else if (!is_bias) {
      Random random(seed ^ nameHash(spec.name));
      const bool residual = spec.name.find("proj.weight") != std::string::npos;
      const double std_dev = residual ? residual_std : 0.02;
      for (T& w : whole) w = static_cast<T>(random.normal() * std_dev);
    }
    copyShardFromGlobal(spec, whole.data(), params_.data() + spec.offset);
  }
  refreshRoundedWeights();
}

template <typename T>
void Gpt<T>::zeroGradients() {
  std::fill(grads_.begin(), grads_.end(), T(0));
}

template <typename T>
void Gpt<T>::checkTokens(const int32_t* tokens, int64_t count, const char* what) const {
  for (int64_t i = 0; i < count; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab) {
      throw std::invalid_argument(std::string(what) + " token " + std::to_string(tokens[i]) + " at position " +
                                  std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(config_.vocab) + ")");
    }
  }
}

template <typename T>
typename Gpt<T>::ParamRange Gpt<T>::tensorRange(int64_t local_layer, const std::string& first,
                                                const std::string& last) const {
  const std::string prefix = "layers." + std::to_string(slice_.first_layer + local_layer) + ".";
  ParamRange r{-1, -1};
  for (const auto& spec : table_) {
    if (spec.name == prefix + first) r.begin = spec.offset;
    if (spec.name == prefix + last) r.end = spec.offset + spec.size();
  }
  if (r.begin < 0 || r.end < r.begin) throw std::logic_error("no tensors " + prefix + first + ".." + last);
  return r;
}

template <typename T>
typename Gpt<T>::LayerRanges Gpt<T>::layerRanges(int64_t local_layer) const {
  const bool serial = config_.block == BlockKind::kSerial;
  return LayerRanges{tensorRange(local_layer, "ln1.weight", "qkv.bias"),
                     tensorRange(local_layer, "proj.weight", "proj.bias"),
                     tensorRange(local_layer, serial ? "ln2.weight" : "fc.weight", "fc.bias"),
                     tensorRange(local_layer, "fcproj.weight", "fcproj.bias")};
}

template <typename T>
typename Gpt<T>::ParamRange Gpt<T>::frontRange() const {
  return ParamRange{0, lp_.empty() ? 0 : layer_ranges_.front().qkv.begin};
}

template <typename T>
typename Gpt<T>::ParamRange Gpt<T>::headRange() const {
  const int64_t total = trainer::parameterCount(table_);
  if (!slice_.hasHead(config_)) return ParamRange{total, total};
  return ParamRange{lp_.empty() ? total : layer_ranges_.back().fcproj.end, total};
}

template <typename T>
std::vector<typename Gpt<T>::ParamRange> Gpt<T>::gradientOrder() const {
  std::vector<ParamRange> order;
  const auto add = [&](ParamRange r) {
    if (r.end > r.begin) order.push_back(r);
  };
  add(headRange());
  if (!slice_.hasEmbedding()) add(frontRange());  // the head's copy of wte is done with the head
  // As backwardLayer finishes them: the serial block's MLP before its attention, the parallel block's two
  // row-parallel GEMMs before its two column-parallel ones.
  const bool serial = config_.block == BlockKind::kSerial;
  for (auto r = layer_ranges_.rbegin(); r != layer_ranges_.rend(); ++r) {
    const std::array<ParamRange, 4> parts = serial ? std::array{r->fcproj, r->fc, r->proj, r->qkv}
                                                   : std::array{r->fcproj, r->proj, r->fc, r->qkv};
    for (const ParamRange& part : parts) add(part);
  }
  if (slice_.hasEmbedding()) add(frontRange());
  return order;
}

template <typename T>
void Gpt<T>::setParameterHooks(std::function<void(ParamRange)> before_use,
                               std::function<void(ParamRange)> gradients_done) {
  before_use_ = std::move(before_use);
  gradients_done_ = std::move(gradients_done);
}

template <typename T>
int64_t Gpt<T>::localRows(int64_t batch) const {
  const int64_t rows = batch * config_.seq_len;
  if (batch < 1) throw std::invalid_argument("batch size must be at least 1 (got " + std::to_string(batch) + ")");
  if (rows % tpSize() != 0) {
    throw std::invalid_argument("tensor parallelism " + std::to_string(tpSize()) + " must divide the " +
                                std::to_string(rows) + " token rows of a micro-batch (batch x seq_len)");
  }
  return rows / tpSize();
}

template <typename T>
Activations<T>& Gpt<T>::slot(int index) {
  if (index < 0) throw std::invalid_argument("activation slot " + std::to_string(index));
  if (static_cast<size_t>(index) >= slots_.size()) slots_.resize(static_cast<size_t>(index) + 1);
  return slots_[static_cast<size_t>(index)];
}

template <typename T>
void Gpt<T>::setPrecision(Precision precision) {
  if (precision == Precision::kBf16 && !std::is_same_v<T, float>) {
    throw std::invalid_argument("bf16 precision is for float models");
  }
  precision_ = precision;
  for (auto& a : slots_) a.batch = 0;  // activations are re-sized (with or without bf16 copies) at next use
  refreshRoundedWeights();
}

template <typename T>
void Gpt<T>::refreshRoundedWeights() {
  if constexpr (std::is_same_v<T, float>) {
    if (!halfPrecision()) return;
    weights_b_.resize(params_.size());
    convertToBf16(weights_b_.data(), params_.data(), static_cast<int64_t>(params_.size()));
  }
}

template <typename T>
void Gpt<T>::round(bf16* dst, const T* src, int64_t count) {
  if constexpr (std::is_same_v<T, float>) {
    if (halfPrecision()) convertToBf16(dst, src, count);
  }
}

template <typename T>
void Gpt<T>::refreshRoundedWeights(ParamRange range) {
  if constexpr (std::is_same_v<T, float>) {
    if (!halfPrecision()) return;
    weights_b_.resize(params_.size());
    convertToBf16(weights_b_.data() + range.begin, params_.data() + range.begin, range.end - range.begin);
  }
}

template <typename T>
void Gpt<T>::setRoundedWeights(ParamRange range, const bf16* rounded) {
  if constexpr (std::is_same_v<T, float>) {
    if (!halfPrecision()) return;
    weights_b_.resize(params_.size());
    std::copy(rounded, rounded + (range.end - range.begin), weights_b_.begin() + range.begin);
  }
}

template <typename T>
void Gpt<T>::gatherRows(T* full, int64_t rows, int64_t cols, const std::function<void(int64_t, int64_t)>& consume) {
  if constexpr (std::is_same_v<T, float>) {
    if (tpSize() > 1) return tp_->allGather(full, rows, cols, consume);
  }
  consume(0, rows);
}

template <typename T>
RowSharding::PendingRows Gpt<T>::scatterRows(
    T* shard, const T* base, int64_t rows, int64_t cols, const std::function<void(int64_t, int64_t, T*)>& produce) {
  if constexpr (std::is_same_v<T, float>) {
    if (tpSize() > 1) return tp_->reduceScatter(shard, base, rows, cols, produce);
  }
  if (base == nullptr) std::fill_n(shard, rows * cols, T(0));
  else if (base != shard) std::copy(base, base + rows * cols, shard);
  produce(0, rows, shard);
  return RowSharding::PendingRows();
}

template <typename T>
void Gpt<T>::reduceTensorParallelGradients() {
  if constexpr (std::is_same_v<T, float>) {
    if (tpSize() == 1) return;
    replicated_grads_.clear();
    for (const auto& spec : table_) {
      if (spec.layout.shard_dim >= 0) continue;
      replicated_grads_.insert(replicated_grads_.end(), grads_.begin() + spec.offset,
                               grads_.begin() + spec.offset + spec.size());
    }
    tp_->allReduce(replicated_grads_.data(), static_cast<int64_t>(replicated_grads_.size()));
    auto from = replicated_grads_.begin();
    for (const auto& spec : table_) {
      if (spec.layout.shard_dim >= 0) continue;
      std::copy(from, from + spec.size(), grads_.begin() + spec.offset);
      from += spec.size();
    }
  }
}

template <typename T>
void Activations<T>::resize(const ModelConfig& c, int tp_size, int64_t layer_count, int64_t batch_size,
                            Precision precision, bool has_head) {
  batch = batch_size;
  const auto n = static_cast<size_t>(batch * c.seq_len), d = static_cast<size_t>(c.d_model);
  const size_t r = n / static_cast<size_t>(tp_size), local = d / static_cast<size_t>(tp_size);
  const size_t heads = static_cast<size_t>(c.heads / tp_size);
  const bool half = precision == Precision::kBf16;
  resid.assign(static_cast<size_t>(layer_count + 1), std::vector<T>(r * d));
  layers.assign(static_cast<size_t>(layer_count), LayerActivations<T>{});
  for (auto& a : layers) {
    a.ln1.resize(n * d);
    a.ln1_mean.resize(r);
    a.ln1_rstd.resize(r);
    a.qkv.resize(n * 3 * local);
    a.att.resize(n * local);
    a.att_lse.resize(static_cast<size_t>(batch) * heads * static_cast<size_t>(c.seq_len));
    if (c.block == BlockKind::kSerial) {
      a.resid1.resize(r * d);
      a.ln2.resize(n * d);
      a.ln2_mean.resize(r);
      a.ln2_rstd.resize(r);
    }
    a.fc.resize(n * 4 * local);
    a.fc_gelu.resize(n * 4 * local);
    if (half) {
      a.ln1_b.resize(n * d);
      a.att_b.resize(n * local);
      if (c.block == BlockKind::kSerial) a.ln2_b.resize(n * d);
      a.fc_gelu_b.resize(n * 4 * local);
    }
  }
  if (has_head) {
    lnf.resize(r * d);
    lnf_mean.resize(r);
    lnf_rstd.resize(r);
    logits.resize(r * static_cast<size_t>(c.vocab));
    lse.resize(r);
    losses.resize(r);
    if (half) lnf_b.resize(r * d);
  }
}

template <typename T>
void BackwardScratch<T>::resize(const ModelConfig& c, int tp_size, int64_t batch, Precision precision,
                                bool has_head) {
  const auto n = static_cast<size_t>(batch * c.seq_len), d = static_cast<size_t>(c.d_model);
  const size_t r = n / static_cast<size_t>(tp_size), local = d / static_cast<size_t>(tp_size);
  const auto grow = [](auto& v, size_t size) {
    if (v.size() < size) v.resize(size);
  };
  grow(dresid, r * d);
  grow(dln, r * d);
  if (tp_size > 1) grow(dy_full, n * d);
  grow(dqkv, n * 3 * local);
  grow(datt, n * local);
  grow(dfc, n * 4 * local);
  grow(dfc_gelu, n * 4 * local);
  if (has_head) grow(dlogits, r * static_cast<size_t>(c.vocab));
  if (precision == Precision::kBf16) {
    grow(dy_b, n * d);
    grow(dqkv_b, n * 3 * local);
    grow(dfc_b, n * 4 * local);
    if (has_head) grow(dlogits_b, r * static_cast<size_t>(c.vocab));
  }
}

template struct Activations<float>;
template struct Activations<double>;
template struct BackwardScratch<float>;
template struct BackwardScratch<double>;
template class Gpt<float>;
template class Gpt<double>;

}  // namespace megascale::trainer
