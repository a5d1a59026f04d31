// Backward pass. dresid carries dLoss/d(residual stream) from the head down to the embedding; each layer
// turns the gradient of its output into that of its input in place (the residual path is the identity, so
// the branches' input gradients are added onto it).
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
void Gpt<T>::projectBackward(T* dx, T* dw, T* db, const T* dy, const T* x, const std::vector<bf16>& x_b, const T* w,
                             const LinearShape& s, bool accumulate_dx) {
  if constexpr (std::is_same_v<T, float>) {
    if (precision_ == Precision::kBf16) {
      return linearBackwardBf16(dx, dw, db, dy, act_.dy_b.data(), x_b.data(), roundedWeight(w), s, accumulate_dx);
    }
  }
  linearBackward(dx, dw, db, dy, x, w, s, accumulate_dx);
}

template <typename T>
void Gpt<T>::backward() {
  if (batch_ == 0) throw std::logic_error("backward() before forward()");
  backwardHead();
  for (int64_t l = static_cast<int64_t>(lp_.size()) - 1; l >= 0; --l) {
    backwardLayer(l, act_.resid[static_cast<size_t>(l)].data(), act_.dresid.data());
  }
  embeddingBackward(g_.wte, g_.wpe, act_.dresid.data(), inputs_.data(), batch_, config_.seq_len, config_.d_model);
}

template <typename T>
void Gpt<T>::backwardHead() {
  const int64_t d = config_.d_model, n = batch_ * config_.seq_len, v = config_.vocab;
  crossEntropyBackward(act_.dlogits.data(), act_.logits.data(), act_.lse.data(), targets_.data(),
                       T(1) / static_cast<T>(n), n, v);
  // dlnf = dlogits wte; dwte += dlogits^T lnf.
  bool done = false;
  if constexpr (std::is_same_v<T, float>) {
    if (precision_ == Precision::kBf16) {
      bf16* dlogits_b = act_.dy_b.data();
      convertToBf16(dlogits_b, act_.dlogits.data(), n * v);
      gemmBf16(GemmBf16Call{Trans::kNo, Trans::kNo, n, d, v, dlogits_b, v, roundedWeight(p_.wte), d, 0.0f,
                            act_.dln.data(), d});
      gemmBf16(GemmBf16Call{Trans::kYes, Trans::kNo, v, d, n, dlogits_b, v, act_.lnf_b.data(), d, 1.0f, g_.wte, d});
      done = true;
    }
  }
  if (!done) {
    gemm(GemmCall<T>{Trans::kNo, Trans::kNo, n, d, v, act_.dlogits.data(), v, p_.wte, d, T(0), act_.dln.data(), d});
    gemm(GemmCall<T>{Trans::kYes, Trans::kNo, v, d, n, act_.dlogits.data(), v, act_.lnf.data(), d, T(1), g_.wte, d});
  }
  std::fill(act_.dresid.begin(), act_.dresid.end(), T(0));
  layerNormBackward(act_.dresid.data(), g_.lnf_w, g_.lnf_b, act_.dln.data(), act_.resid.back().data(),
                    act_.lnf_mean.data(), act_.lnf_rstd.data(), p_.lnf_w, n, d);
}

template <typename T>
void Gpt<T>::backwardLayer(int64_t l, const T* x, T* dresid) {
  const LayerParams<T>& p = lp_[static_cast<size_t>(l)];
  const LayerParams<T>& g = lg_[static_cast<size_t>(l)];
  LayerActivations<T>& a = act_.layers[static_cast<size_t>(l)];
  const int64_t d = config_.d_model, n = batch_ * config_.seq_len, local = d / slice_.tp_size;
  const AttentionShape shape{batch_, config_.seq_len, config_.heads / slice_.tp_size, config_.headDim(),
                             config_.effectiveWindow()};
  const bool serial = config_.block == BlockKind::kSerial;

  // MLP branch: dy -> d(gelu out) -> d(fc) -> d(its LayerNorm output).
  projectBackward(act_.dfc_gelu.data(), g.fcproj_w, g.fcproj_b, dresid, a.fc_gelu.data(), a.fc_gelu_b, p.fcproj_w,
                  LinearShape{n, 4 * local, d}, false);
  geluBackward(act_.dfc.data(), act_.dfc_gelu.data(), a.fc.data(), n * 4 * local);
  projectBackward(act_.dln.data(), g.fc_w, g.fc_b, act_.dfc.data(), serial ? a.ln2.data() : a.ln1.data(),
                  serial ? a.ln2_b : a.ln1_b, p.fc_w, LinearShape{n, d, 4 * local}, false);
  if (serial) {
    // dresid becomes d(resid1): the identity path plus LN2's input gradient.
    layerNormBackward(dresid, g.ln2_w, g.ln2_b, act_.dln.data(), a.resid1.data(), a.ln2_mean.data(),
                      a.ln2_rstd.data(), p.ln2_w, n, d);
  }

  // Attention branch: d(proj) -> d(att) -> d(qkv) -> d(ln1), added to the MLP's d(ln1) in the parallel block.
  projectBackward(act_.datt.data(), g.proj_w, g.proj_b, dresid, a.att.data(), a.att_b, p.proj_w,
                  LinearShape{n, local, d}, false);
  attentionBackward(act_.dqkv.data(), act_.datt.data(), a.qkv.data(), a.att.data(), a.att_lse.data(), shape);
  projectBackward(act_.dln.data(), g.qkv_w, g.qkv_b, act_.dqkv.data(), a.ln1.data(), a.ln1_b, p.qkv_w,
                  LinearShape{n, d, 3 * local}, !serial);
  layerNormBackward(dresid, g.ln1_w, g.ln1_b, act_.dln.data(), x, a.ln1_mean.data(), a.ln1_rstd.data(), p.ln1_w, n,
                    d);
}

template void Gpt<float>::backward();
template void Gpt<double>::backward();

}  // namespace megascale::trainer
