// Backward pass. scratch dresid carries dLoss/d(residual stream shard) from the head down to the embedding;
// each layer turns the gradient of its output into that of its input in place (the residual path is the
// identity, so the branches' input gradients are added onto it). Inside the tensor-parallel regions the
// output gradient is all-gathered and the LayerNorm-output gradient reduce-scattered, the mirror of forward;
// each reduce-scatter runs while the weight gradients of the same GEMMs are computed.
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
void Gpt<T>::inputGrad(T* dx, const T* dy, const bf16* dy_b, const T* w, const LinearShape& s, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (halfPrecision()) return linearInputGradBf16(dx, dy_b, roundedWeight(w), s, accumulate);
  }
  linearInputGrad(dx, dy, w, s, accumulate);
}

template <typename T>
void Gpt<T>::weightGrad(T* dw, T* db, const T* dy, const bf16* dy_b, const T* x, const bf16* x_b,
                        const LinearShape& s) {
  if constexpr (std::is_same_v<T, float>) {
    if (halfPrecision()) return linearWeightGradBf16(dw, db, dy, dy_b, x_b, s);
  }
  linearWeightGrad(dw, db, dy, x, s);
}

template <typename T>
void Gpt<T>::backward() {
  if (slots_.empty() || !slots_[0].awaiting_backward) throw std::logic_error("backward() before forward()");
  backwardStage(0, nullptr, nullptr);
  reduceTensorParallelGradients();
}

template <typename T>
void Gpt<T>::backwardStage(int index, const T* output_grad, T* input_grad) {
  if (index < 0 || static_cast<size_t>(index) >= slots_.size() || !slots_[static_cast<size_t>(index)].awaiting_backward) {
    throw std::logic_error("backward of activation slot " + std::to_string(index) + " before its forward");
  }
  Activations<T>& a = slots_[static_cast<size_t>(index)];
  const int64_t rows = localRows(a.batch), d = config_.d_model;
  const bool head = slice_.hasHead(config_);
  scratch_.resize(config_, tpSize(), a.batch, precision_, head);
  if (head) {
    backwardHead(a);
    gradientsDone(headRange());
    if (!slice_.hasEmbedding()) gradientsDone(frontRange());
  } else {
    if (output_grad == nullptr) throw std::invalid_argument("a stage before the last needs its output gradient");
    std::copy(output_grad, output_grad + rows * d, scratch_.dresid.begin());
  }
  for (int64_t l = static_cast<int64_t>(lp_.size()) - 1; l >= 0; --l) {
    backwardLayer(a, l);
  }
  if (slice_.hasEmbedding()) {
    embeddingBackward(g_.wte, g_.wpe, scratch_.dresid.data(), a.tokens.data(), rows, slice_.tp_rank * rows,
                      config_.seq_len, d);
    gradientsDone(frontRange());
  } else if (input_grad != nullptr) {
    std::copy(scratch_.dresid.begin(), scratch_.dresid.begin() + rows * d, input_grad);
  }
  a.awaiting_backward = false;
}

template <typename T>
void Gpt<T>::backwardHead(Activations<T>& a) {
  const int64_t d = config_.d_model, rows = localRows(a.batch), v = config_.vocab;
  T* dlogits = scratch_.dlogits.data();
  crossEntropyBackward(dlogits, a.logits.data(), a.lse.data(), a.targets.data(), a.loss_scale, rows, v);
  // dlnf = dlogits wte; dwte += dlogits^T lnf.
  bool done = false;
  if constexpr (std::is_same_v<T, float>) {
    if (halfPrecision()) {
      bf16* dlogits_b = scratch_.dlogits_b.data();
      convertToBf16(dlogits_b, dlogits, rows * v);
      gemmBf16(GemmBf16Call{Trans::kNo, Trans::kNo, rows, d, v, dlogits_b, v, roundedWeight(p_.wte), d, 0.0f,
                            scratch_.dln.data(), d});
      gemmBf16(GemmBf16Call{Trans::kYes, Trans::kNo, v, d, rows, dlogits_b, v, a.lnf_b.data(), d, 1.0f, g_.wte, d});
      done = true;
    }
  }
  if (!done) {
    gemm(GemmCall<T>{Trans::kNo, Trans::kNo, rows, d, v, dlogits, v, p_.wte, d, T(0), scratch_.dln.data(), d});
    gemm(GemmCall<T>{Trans::kYes, Trans::kNo, v, d, rows, dlogits, v, a.lnf.data(), d, T(1), g_.wte, d});
  }
  std::fill_n(scratch_.dresid.begin(), rows * d, T(0));
  layerNormBackward(scratch_.dresid.data(), g_.lnf_w, g_.lnf_b, scratch_.dln.data(), a.resid.back().data(),
                    a.lnf_mean.data(), a.lnf_rstd.data(), p_.lnf_w, rows, d);
}

template <typename T>
void Gpt<T>::rowParallelBackward(int64_t batch, std::initializer_list<Projection> projections) {
  const int64_t rows = localRows(batch), n = rows * tpSize(), d = config_.d_model;
  T* dresid = scratch_.dresid.data();
  T* dy = tpSize() > 1 ? scratch_.dy_full.data() : dresid;  // the gathered output gradient [N, C]
  if (tpSize() > 1) std::copy(dresid, dresid + rows * d, dy + slice_.tp_rank * rows * d);
  bf16* dy_b = halfPrecision() ? scratch_.dy_b.data() : nullptr;
  gatherRows(dy, rows, d, [&](int64_t first, int64_t count) {
    round(dy_b + (halfPrecision() ? first * d : 0), dy + first * d, count * d);
    for (const Projection& p : projections) {
      inputGrad(p.dact + first * p.width, dy + first * d, halfPrecision() ? dy_b + first * d : nullptr, p.w,
                LinearShape{count, p.width, d}, false);
    }
  });
  for (const Projection& p : projections) {
    weightGrad(p.dw, nullptr, dy, dy_b, p.act, p.act_b, LinearShape{n, p.width, d});
    addColumnSums(p.db, dresid, rows, d);  // a replicated bias: this rank's rows (summed across TP later)
  }
}

template <typename T>
void Gpt<T>::columnParallelBackward(int64_t batch, const T* ln_full, const bf16* ln_b,
                                    std::initializer_list<Projection> projections) {
  const int64_t rows = localRows(batch), n = rows * tpSize(), d = config_.d_model;
  for (const Projection& p : projections) round(p.dact_b, p.dact, n * p.width);
  auto pending = scatterRows(scratch_.dln.data(), nullptr, rows, d, [&](int64_t first, int64_t count, T* dst) {
    for (const Projection& p : projections) {
      inputGrad(dst, p.dact + first * p.width, halfPrecision() ? p.dact_b + first * p.width : nullptr, p.w,
                LinearShape{count, d, p.width}, true);
    }
  });
  for (const Projection& p : projections) weightGrad(p.dw, p.db, p.dact, p.dact_b, ln_full, ln_b, LinearShape{n, d, p.width});
  pending.finish();
}

template <typename T>
void Gpt<T>::backwardLayer(Activations<T>& a, int64_t l) {
  const LayerParams<T>& p = lp_[static_cast<size_t>(l)];
  const LayerParams<T>& g = lg_[static_cast<size_t>(l)];
  LayerActivations<T>& la = a.layers[static_cast<size_t>(l)];
  BackwardScratch<T>& s = scratch_;
  const int64_t d = config_.d_model, rows = localRows(a.batch), n = rows * tpSize(), local = d / tpSize();
  const AttentionShape shape{a.batch, config_.seq_len, config_.heads / tpSize(), config_.headDim(),
                             config_.effectiveWindow()};
  const bool half = halfPrecision();
  const Projection proj{p.proj_w, nullptr, la.att.data(), half ? la.att_b.data() : nullptr, g.proj_w, g.proj_b,
                        s.datt.data(), nullptr, local};
  const Projection fcproj{p.fcproj_w, nullptr, la.fc_gelu.data(), half ? la.fc_gelu_b.data() : nullptr, g.fcproj_w,
                          g.fcproj_b, s.dfc_gelu.data(), nullptr, 4 * local};
  const Projection qkv{p.qkv_w, nullptr, la.qkv.data(), nullptr, g.qkv_w, g.qkv_b, s.dqkv.data(),
                       half ? s.dqkv_b.data() : nullptr, 3 * local};
  const Projection fc{p.fc_w, nullptr, la.fc.data(), nullptr, g.fc_w, g.fc_b, s.dfc.data(),
                      half ? s.dfc_b.data() : nullptr, 4 * local};
  const T* x = a.resid[static_cast<size_t>(l)].data();
  // Each GEMM's gradients leave (gradientsDone) as soon as they are final, in gradientOrder's order.
  const LayerRanges& ranges = layer_ranges_[static_cast<size_t>(l)];

  if (config_.block == BlockKind::kSerial) {
    // MLP: d(resid1) = dy + LN2'(d ln2).
    rowParallelBackward(a.batch, {fcproj});
    gradientsDone(ranges.fcproj);
    geluBackward(s.dfc.data(), s.dfc_gelu.data(), la.fc.data(), n * 4 * local);
    columnParallelBackward(a.batch, la.ln2.data(), half ? la.ln2_b.data() : nullptr, {fc});
    layerNormBackward(s.dresid.data(), g.ln2_w, g.ln2_b, s.dln.data(), la.resid1.data(), la.ln2_mean.data(),
                      la.ln2_rstd.data(), p.ln2_w, rows, d);
    gradientsDone(ranges.fc);
    rowParallelBackward(a.batch, {proj});
    gradientsDone(ranges.proj);
    attentionBackward(s.dqkv.data(), s.datt.data(), la.qkv.data(), la.att.data(), la.att_lse.data(), shape);
    columnParallelBackward(a.batch, la.ln1.data(), half ? la.ln1_b.data() : nullptr, {qkv});
  } else {
    rowParallelBackward(a.batch, {fcproj, proj});
    gradientsDone(ranges.fcproj);
    gradientsDone(ranges.proj);
    geluBackward(s.dfc.data(), s.dfc_gelu.data(), la.fc.data(), n * 4 * local);
    attentionBackward(s.dqkv.data(), s.datt.data(), la.qkv.data(), la.att.data(), la.att_lse.data(), shape);
    columnParallelBackward(a.batch, la.ln1.data(), half ? la.ln1_b.data() : nullptr, {fc, qkv});
    gradientsDone(ranges.fc);
  }
  layerNormBackward(s.dresid.data(), g.ln1_w, g.ln1_b, s.dln.data(), x, la.ln1_mean.data(), la.ln1_rstd.data(),
                    p.ln1_w, rows, d);
  gradientsDone(ranges.qkv);
}

template void Gpt<float>::backward();
template void Gpt<double>::backward();
template void Gpt<float>::backwardStage(int, const float*, float*);
template void Gpt<double>::backwardStage(int, const double*, double*);

}  // namespace megascale::trainer
