#include "trainer/model/gpt.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "trainer/model/random.h"

namespace megascale::trainer {

template <typename T>
Gpt<T>::Gpt(const ModelConfig& config, const ModelSlice& slice)
    : config_(config), slice_(slice), table_(buildParameterTable(config, slice)) {
  if (slice.tp_size != 1 || !slice.hasEmbedding() || !slice.hasHead(config)) {
    // The table and layer shapes already describe slices; running one needs the collectives of the
    // parallel trainer.
    throw std::invalid_argument("this build runs the whole model in one process (tensor parallelism " +
                                std::to_string(slice.tp_size) + ", layers [" + std::to_string(slice.first_layer) +
                                ", " + std::to_string(slice.layerEnd(config)) + ") asked)");
  }
  const int64_t count = trainer::parameterCount(table_);
  params_.assign(static_cast<size_t>(count), T(0));
  grads_.assign(static_cast<size_t>(count), T(0));
  bindParameters(params_.data(), table_, config_, slice_, p_, lp_);
  bindParameters(grads_.data(), table_, config_, slice_, g_, lg_);
}

template <typename T>
void Gpt<T>::initialize(uint64_t seed) {
  Random random(seed);
  const double residual_std = 0.02 / std::sqrt(2.0 * static_cast<double>(config_.layers));
  for (const auto& spec : table_) {
    T* data = params_.data() + spec.offset;
    const bool is_norm = spec.name.find("ln") != std::string::npos;
    const bool is_bias = spec.name.size() > 5 && spec.name.compare(spec.name.size() - 5, 5, ".bias") == 0;
    if (is_norm && !is_bias) {
      std::fill_n(data, spec.size(), T(1));
    } else if (is_bias) {
      std::fill_n(data, spec.size(), T(0));
    } else {
      const bool residual = spec.name.find("proj.weight") != std::string::npos;
      const double std_dev = residual ? residual_std : 0.02;
      for (int64_t i = 0; i < spec.size(); ++i) data[i] = static_cast<T>(random.normal() * std_dev);
    }
  }
}

template <typename T>
void Gpt<T>::zeroGradients() {
  std::fill(grads_.begin(), grads_.end(), T(0));
}

template <typename T>
void Gpt<T>::checkTokens(const int32_t* tokens, const char* what) const {
  const int64_t n = batch_ * config_.seq_len;
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab) {
      throw std::invalid_argument(std::string(what) + " token " + std::to_string(tokens[i]) + " at position " +
                                  std::to_string(i) + " is outside the vocabulary [0, " +
                                  std::to_string(config_.vocab) + ")");
    }
  }
}

template <typename T>
void Gpt<T>::setPrecision(Precision precision) {
  if (precision == Precision::kBf16 && !std::is_same_v<T, float>) {
    throw std::invalid_argument("bf16 precision is for float models");
  }
  precision_ = precision;
  batch_ = 0;  // activations are re-sized (with or without bf16 copies) at the next forward()
}

template <typename T>
void Activations<T>::resize(const ModelConfig& c, int tp_size, int64_t layer_count, int64_t batch,
                            Precision precision) {
  const auto n = static_cast<size_t>(batch * c.seq_len), d = static_cast<size_t>(c.d_model);
  const size_t local = d / static_cast<size_t>(tp_size);
  const size_t heads = static_cast<size_t>(c.heads / tp_size);
  resid.assign(static_cast<size_t>(layer_count + 1), std::vector<T>(n * d));
  layers.assign(static_cast<size_t>(layer_count), LayerActivations<T>{});
  for (auto& a : layers) {
    a.ln1.resize(n * d);
    a.ln1_mean.resize(n);
    a.ln1_rstd.resize(n);
    a.qkv.resize(n * 3 * local);
    a.att.resize(n * local);
    a.att_lse.resize(static_cast<size_t>(batch) * heads * static_cast<size_t>(c.seq_len));
    if (c.block == BlockKind::kSerial) {
      a.resid1.resize(n * d);
      a.ln2.resize(n * d);
      a.ln2_mean.resize(n);
      a.ln2_rstd.resize(n);
    }
    a.fc.resize(n * 4 * local);
    a.fc_gelu.resize(n * 4 * local);
    if (precision == Precision::kBf16) {
      a.ln1_b.resize(n * d);
      a.att_b.resize(n * local);
      if (c.block == BlockKind::kSerial) a.ln2_b.resize(n * d);
      a.fc_gelu_b.resize(n * 4 * local);
    }
  }
  if (precision == Precision::kBf16) {
    lnf_b.resize(n * d);
    dy_b.resize(n * std::max<size_t>(4 * local, static_cast<size_t>(c.vocab)));
  }
  lnf.resize(n * d);
  lnf_mean.resize(n);
  lnf_rstd.resize(n);
  logits.resize(n * static_cast<size_t>(c.vocab));
  lse.resize(n);
  losses.resize(n);
  dresid.resize(n * d);
  dln.resize(n * d);
  dqkv.resize(n * 3 * local);
  datt.resize(n * local);
  dfc.resize(n * 4 * local);
  dfc_gelu.resize(n * 4 * local);
  dlogits.resize(n * static_cast<size_t>(c.vocab));
}

template struct Activations<float>;
template struct Activations<double>;
template class Gpt<float>;
template class Gpt<double>;

}  // namespace megascale::trainer
