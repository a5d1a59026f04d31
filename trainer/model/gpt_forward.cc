// Forward pass. Residual branches accumulate straight into the next residual buffer (the GEMM's beta = 1),
// so no separate residual-add pass exists.
#include <algorithm>
#include <stdexcept>

#include "trainer/kernels/attention.h"
#include "trainer/kernels/cross_entropy.h"
#include "trainer/kernels/embedding.h"
#include "trainer/kernels/gelu.h"
#include "trainer/kernels/gemm.h"
#include "trainer/kernels/gemm_bf16.h"
#include "trainer/kernels/layernorm.h"
#include "trainer/model/gpt.h"

namespace megascale::trainer {

template <typename T>
void Gpt<T>::project(T* y, const T* x, std::vector<bf16>& x_b, bool round_x, const T* w, const T* b,
                     const LinearShape& s, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision_ == Precision::kBf16) {
      if (round_x) convertToBf16(x_b.data(), x, s.rows * s.in);
      return linearForwardBf16(y, x_b.data(), roundedWeight(w), b, s, accumulate);
    }
  }
  linearForward(y, x, w, b, s, accumulate);
}

template <typename T>
T Gpt<T>::forward(const int32_t* inputs, const int32_t* targets, int64_t batch) {
  if (batch < 1) throw std::invalid_argument("batch size must be at least 1 (got " + std::to_string(batch) + ")");
  if (batch != batch_) {
    act_.resize(config_, slice_.tp_size, static_cast<int64_t>(lp_.size()), batch, precision_);
    batch_ = batch;
  }
  checkTokens(inputs, "input");
  checkTokens(targets, "target");
  if constexpr (std::is_same_v<T, float>) {
    if (precision_ == Precision::kBf16) {  // the weights changed since the last step: round them once
      weights_b_.resize(params_.size());
      convertToBf16(weights_b_.data(), params_.data(), static_cast<int64_t>(params_.size()));
    }
  }
  const int64_t n = batch * config_.seq_len;
  inputs_.assign(inputs, inputs + n);
  targets_.assign(targets, targets + n);
  embeddingForward(act_.resid[0].data(), inputs, p_.wte, p_.wpe, batch, config_.seq_len, config_.d_model);
  for (size_t l = 0; l < lp_.size(); ++l) {
    forwardLayer(static_cast<int64_t>(l), act_.resid[l].data(), act_.resid[l + 1].data());
  }
  forwardHead(targets);
  T total = 0;
  for (T loss : act_.losses) total += loss;
  return total / static_cast<T>(n);
}

template <typename T>
void Gpt<T>::forwardLayer(int64_t l, const T* x, T* y) {
  const LayerParams<T>& p = lp_[static_cast<size_t>(l)];
  LayerActivations<T>& a = act_.layers[static_cast<size_t>(l)];
  const int64_t d = config_.d_model, n = batch_ * config_.seq_len, local = d / slice_.tp_size;
  const AttentionShape shape{batch_, config_.seq_len, config_.heads / slice_.tp_size, config_.headDim(),
                             config_.effectiveWindow()};

  layerNormForward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, p.ln1_w, p.ln1_b, n, d);
  project(a.qkv.data(), a.ln1.data(), a.ln1_b, true, p.qkv_w, p.qkv_b, LinearShape{n, d, 3 * local}, false);
  attentionForward(a.att.data(), a.att_lse.data(), a.qkv.data(), shape);
  // The attention branch lands on the residual: y = x + att W_proj + b (serial: into resid1 first).
  T* after_attention = config_.block == BlockKind::kSerial ? a.resid1.data() : y;
  std::copy(x, x + n * d, after_attention);
  project(after_attention, a.att.data(), a.att_b, true, p.proj_w, p.proj_b, LinearShape{n, local, d}, true);

  if (config_.block == BlockKind::kSerial) {
    layerNormForward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.resid1.data(), p.ln2_w, p.ln2_b, n, d);
    std::copy(a.resid1.begin(), a.resid1.end(), y);
    project(a.fc.data(), a.ln2.data(), a.ln2_b, true, p.fc_w, p.fc_b, LinearShape{n, d, 4 * local}, false);
  } else {  // the MLP reads the same LayerNorm output, already rounded for the qkv GEMM
    project(a.fc.data(), a.ln1.data(), a.ln1_b, false, p.fc_w, p.fc_b, LinearShape{n, d, 4 * local}, false);
  }
  geluForward(a.fc_gelu.data(), a.fc.data(), n * 4 * local);
  project(y, a.fc_gelu.data(), a.fc_gelu_b, true, p.fcproj_w, p.fcproj_b, LinearShape{n, 4 * local, d}, true);
}

template <typename T>
void Gpt<T>::forwardHead(const int32_t* targets) {
  const int64_t d = config_.d_model, n = batch_ * config_.seq_len, v = config_.vocab;
  layerNormForward(act_.lnf.data(), act_.lnf_mean.data(), act_.lnf_rstd.data(), act_.resid.back().data(), p_.lnf_w,
                   p_.lnf_b, n, d);
  // Tied head: logits = lnf wte^T.
  if constexpr (std::is_same_v<T, float>) {
    if (precision_ == Precision::kBf16) {
      convertToBf16(act_.lnf_b.data(), act_.lnf.data(), n * d);
      gemmBf16(GemmBf16Call{Trans::kNo, Trans::kYes, n, v, d, act_.lnf_b.data(), d, roundedWeight(p_.wte), d, 0.0f,
                            act_.logits.data(), v});
      return crossEntropyForward(act_.losses.data(), act_.lse.data(), act_.logits.data(), targets, n, v);
    }
  }
  gemm(GemmCall<T>{Trans::kNo, Trans::kYes, n, v, d, act_.lnf.data(), d, p_.wte, d, T(0), act_.logits.data(), v});
  crossEntropyForward(act_.losses.data(), act_.lse.data(), act_.logits.data(), targets, n, v);
}

template float Gpt<float>::forward(const int32_t*, const int32_t*, int64_t);
template double Gpt<double>::forward(const int32_t*, const int32_t*, int64_t);

}  // namespace megascale::trainer
