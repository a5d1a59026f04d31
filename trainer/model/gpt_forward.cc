// Forward pass. Residual branches accumulate straight into the next residual buffer (the GEMM's beta = 1),
// so no separate residual-add pass exists.
#include <algorithm>
#include <stdexcept>

#include "trainer/kernels/attention.h"
#include "trainer/kernels/cross_entropy.h"
#include "trainer/kernels/embedding.h"
#include "trainer/kernels/gelu.h"
#include "trainer/kernels/gemm.h"
#include "trainer/kernels/layernorm.h"
#include "trainer/kernels/linear.h"
#include "trainer/model/gpt.h"

namespace megascale::trainer {

template <typename T>
T Gpt<T>::forward(const int32_t* inputs, const int32_t* targets, int64_t batch) {
  if (batch < 1) throw std::invalid_argument("batch size must be at least 1 (got " + std::to_string(batch) + ")");
  if (batch != batch_) {
    act_.resize(config_, slice_.tp_size, static_cast<int64_t>(lp_.size()), batch);
    batch_ = batch;
  }
  checkTokens(inputs, "input");
  checkTokens(targets, "target");
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
  linearForward(a.qkv.data(), a.ln1.data(), p.qkv_w, p.qkv_b, LinearShape{n, d, 3 * local}, false);
  attentionForward(a.att.data(), a.att_lse.data(), a.qkv.data(), shape);
  // The attention branch lands on the residual: y = x + att W_proj + b (serial: into resid1 first).
  T* after_attention = config_.block == BlockKind::kSerial ? a.resid1.data() : y;
  std::copy(x, x + n * d, after_attention);
  linearForward(after_attention, a.att.data(), p.proj_w, p.proj_b, LinearShape{n, local, d}, true);

  const T* mlp_input = a.ln1.data();
  if (config_.block == BlockKind::kSerial) {
    layerNormForward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.resid1.data(), p.ln2_w, p.ln2_b, n, d);
    mlp_input = a.ln2.data();
    std::copy(a.resid1.begin(), a.resid1.end(), y);
  }
  linearForward(a.fc.data(), mlp_input, p.fc_w, p.fc_b, LinearShape{n, d, 4 * local}, false);
  geluForward(a.fc_gelu.data(), a.fc.data(), n * 4 * local);
  linearForward(y, a.fc_gelu.data(), p.fcproj_w, p.fcproj_b, LinearShape{n, 4 * local, d}, true);
}

template <typename T>
void Gpt<T>::forwardHead(const int32_t* targets) {
  const int64_t d = config_.d_model, n = batch_ * config_.seq_len, v = config_.vocab;
  layerNormForward(act_.lnf.data(), act_.lnf_mean.data(), act_.lnf_rstd.data(), act_.resid.back().data(), p_.lnf_w,
                   p_.lnf_b, n, d);
  // Tied head: logits = lnf wte^T.
  gemm(GemmCall<T>{Trans::kNo, Trans::kYes, n, v, d, act_.lnf.data(), d, p_.wte, d, T(0), act_.logits.data(), v});
  crossEntropyForward(act_.losses.data(), act_.lse.data(), act_.logits.data(), targets, n, v);
}

template float Gpt<float>::forward(const int32_t*, const int32_t*, int64_t);
template double Gpt<double>::forward(const int32_t*, const int32_t*, int64_t);

}  // namespace megascale::trainer
