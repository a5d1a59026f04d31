// Forward pass. The row-parallel GEMMs accumulate straight onto the residual stream (the GEMM's beta = 1)
// when there is one TP rank; with more, their partial sums are reduce-scattered onto it.
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
void Gpt<T>::project(T* y, const T* x, const bf16* x_b, const T* w, const T* b, const LinearShape& s,
                     bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    if (halfPrecision()) return linearForwardBf16(y, x_b, roundedWeight(w), b, s, accumulate);
  }
  linearForward(y, x, w, b, s, accumulate);
}

template <typename T>
T Gpt<T>::forward(const int32_t* inputs, const int32_t* targets, int64_t batch) {
  if (!slice_.hasEmbedding() || !slice_.hasHead(config_)) {
    throw std::logic_error("forward() runs the whole model; a pipeline stage runs forwardStage()");
  }
  const int64_t n = localRows(batch) * tpSize();
  refreshRoundedWeights();
  T total = forwardStage(0, StageInput{inputs, nullptr, targets, batch, T(1) / static_cast<T>(n)}, nullptr);
  if constexpr (std::is_same_v<T, float>) {
    if (tpSize() > 1) tp_->allReduce(&total, 1);
  }
  return total / static_cast<T>(n);
}

template <typename T>
T Gpt<T>::forwardStage(int index, const StageInput& input, T* output) {
  const int64_t rows = localRows(input.batch), n = rows * tpSize(), d = config_.d_model;
  const int64_t first_row = slice_.tp_rank * rows;
  const bool head = slice_.hasHead(config_);
  Activations<T>& a = slot(index);
  if (a.batch != input.batch) {
    a.resize(config_, tpSize(), static_cast<int64_t>(lp_.size()), input.batch, precision_, head);
  }
  if (slice_.hasEmbedding()) {
    if (input.tokens == nullptr) throw std::invalid_argument("the first pipeline stage reads tokens");
    checkTokens(input.tokens, n, "input");  // all of them, so that every TP rank fails alike
    a.tokens.assign(input.tokens + first_row, input.tokens + first_row + rows);
    beforeUse(frontRange());
    embeddingForward(a.resid[0].data(), a.tokens.data(), p_.wte, p_.wpe, rows, first_row, config_.seq_len, d);
  } else {
    if (input.activations == nullptr) throw std::invalid_argument("a later pipeline stage reads activations");
    std::copy(input.activations, input.activations + rows * d, a.resid[0].begin());
  }
  if (head) {
    if (input.targets == nullptr) throw std::invalid_argument("the last pipeline stage reads targets");
    checkTokens(input.targets, n, "target");
    a.targets.assign(input.targets + first_row, input.targets + first_row + rows);
    a.loss_scale = input.loss_scale;
  }
  for (size_t l = 0; l < lp_.size(); ++l) {
    forwardLayer(a, static_cast<int64_t>(l));
  }
  a.awaiting_backward = true;
  if (!head) {
    if (output != nullptr) std::copy(a.resid.back().begin(), a.resid.back().end(), output);
    return T(0);
  }
  beforeUse(headRange());
  if (!slice_.hasEmbedding()) beforeUse(frontRange());
  forwardHead(a);
  T total = 0;
  for (T loss : a.losses) total += loss;
  return total;
}

template <typename T>
void Gpt<T>::columnParallelForward(int64_t batch, T* ln_full, bf16* ln_b,
                                   std::initializer_list<Projection> projections) {
  const int64_t rows = localRows(batch), d = config_.d_model;
  gatherRows(ln_full, rows, d, [&](int64_t first, int64_t count) {
    const bf16* x_b = halfPrecision() ? ln_b + first * d : nullptr;
    round(ln_b + (halfPrecision() ? first * d : 0), ln_full + first * d, count * d);
    for (const Projection& p : projections) {
      project(p.act + first * p.width, ln_full + first * d, x_b, p.w, p.b, LinearShape{count, d, p.width}, false);
    }
  });
}

template <typename T>
void Gpt<T>::rowParallelForward(int64_t batch, T* shard, const T* base, std::initializer_list<Projection> projections) {
  const int64_t rows = localRows(batch), n = rows * tpSize(), d = config_.d_model;
  for (const Projection& p : projections) round(p.act_b, p.act, n * p.width);
  const bool adds_bias = slice_.tp_rank == 0;  // the partial sums carry each bias once
  scatterRows(shard, base, rows, d, [&](int64_t first, int64_t count, T* dst) {
    for (const Projection& p : projections) {
      project(dst, p.act + first * p.width, halfPrecision() ? p.act_b + first * p.width : nullptr, p.w, adds_bias ? p.b : nullptr,
              LinearShape{count, p.width, d}, true);
    }
  }).finish();
}

template <typename T>
void Gpt<T>::forwardLayer(Activations<T>& a, int64_t l) {
  const LayerParams<T>& p = lp_[static_cast<size_t>(l)];
  LayerActivations<T>& la = a.layers[static_cast<size_t>(l)];
  const int64_t d = config_.d_model, rows = localRows(a.batch), n = rows * tpSize(), local = d / tpSize();
  const int64_t mine = slice_.tp_rank * rows * d;  // this rank's rows in a gathered [N, C] tensor
  const AttentionShape shape{a.batch, config_.seq_len, config_.heads / tpSize(), config_.headDim(),
                             config_.effectiveWindow()};
  const T* x = a.resid[static_cast<size_t>(l)].data();
  T* y = a.resid[static_cast<size_t>(l) + 1].data();
  const auto column = [](const T* w, const T* b, std::vector<T>& out, int64_t width) {
    return Projection{w, b, out.data(), nullptr, nullptr, nullptr, nullptr, nullptr, width};
  };
  const auto row = [this](const T* w, const T* b, std::vector<T>& in, std::vector<bf16>& in_b, int64_t width) {
    return Projection{w, b, in.data(), halfPrecision() ? in_b.data() : nullptr, nullptr, nullptr, nullptr, nullptr, width};
  };

  // Each GEMM's parameters are waited for just before it (the data-parallel gathers of the rest move meanwhile).
  const LayerRanges& ranges = layer_ranges_[static_cast<size_t>(l)];
  const bool serial = config_.block == BlockKind::kSerial;
  beforeUse(ranges.qkv);
  if (!serial) beforeUse(ranges.fc);
  layerNormForward(la.ln1.data() + mine, la.ln1_mean.data(), la.ln1_rstd.data(), x, p.ln1_w, p.ln1_b, rows, d);
  if (serial) {
    columnParallelForward(a.batch, la.ln1.data(), la.ln1_b.data(), {column(p.qkv_w, p.qkv_b, la.qkv, 3 * local)});
    attentionForward(la.att.data(), la.att_lse.data(), la.qkv.data(), shape);
    beforeUse(ranges.proj);
    rowParallelForward(a.batch, la.resid1.data(), x, {row(p.proj_w, p.proj_b, la.att, la.att_b, local)});
    beforeUse(ranges.fc);
    layerNormForward(la.ln2.data() + mine, la.ln2_mean.data(), la.ln2_rstd.data(), la.resid1.data(), p.ln2_w,
                     p.ln2_b, rows, d);
    columnParallelForward(a.batch, la.ln2.data(), la.ln2_b.data(), {column(p.fc_w, p.fc_b, la.fc, 4 * local)});
    geluForward(la.fc_gelu.data(), la.fc.data(), n * 4 * local);
    beforeUse(ranges.fcproj);
    rowParallelForward(a.batch, y, la.resid1.data(), {row(p.fcproj_w, p.fcproj_b, la.fc_gelu, la.fc_gelu_b, 4 * local)});
    return;
  }
  // The parallel block: attention and MLP read the same gathered LayerNorm output, and their partial outputs
  // are summed before one reduce-scatter.
  columnParallelForward(a.batch, la.ln1.data(), la.ln1_b.data(),
                        {column(p.qkv_w, p.qkv_b, la.qkv, 3 * local), column(p.fc_w, p.fc_b, la.fc, 4 * local)});
  attentionForward(la.att.data(), la.att_lse.data(), la.qkv.data(), shape);
  geluForward(la.fc_gelu.data(), la.fc.data(), n * 4 * local);
  beforeUse(ranges.proj);
  beforeUse(ranges.fcproj);
  rowParallelForward(a.batch, y, x,
                     {row(p.proj_w, p.proj_b, la.att, la.att_b, local),
                      row(p.fcproj_w, p.fcproj_b, la.fc_gelu, la.fc_gelu_b, 4 * local)});
}

template <typename T>
void Gpt<T>::forwardHead(Activations<T>& a) {
  const int64_t d = config_.d_model, rows = localRows(a.batch), v = config_.vocab;
  layerNormForward(a.lnf.data(), a.lnf_mean.data(), a.lnf_rstd.data(), a.resid.back().data(), p_.lnf_w, p_.lnf_b,
                   rows, d);
  // Tied head: logits = lnf wte^T, on this rank's rows (every TP rank holds all of wte).
  if constexpr (std::is_same_v<T, float>) {
    if (halfPrecision()) {
      convertToBf16(a.lnf_b.data(), a.lnf.data(), rows * d);
      gemmBf16(GemmBf16Call{Trans::kNo, Trans::kYes, rows, v, d, a.lnf_b.data(), d, roundedWeight(p_.wte), d, 0.0f,
                            a.logits.data(), v});
      return crossEntropyForward(a.losses.data(), a.lse.data(), a.logits.data(), a.targets.data(), rows, v);
    }
  }
  gemm(GemmCall<T>{Trans::kNo, Trans::kYes, rows, v, d, a.lnf.data(), d, p_.wte, d, T(0), a.logits.data(), v});
  crossEntropyForward(a.losses.data(), a.lse.data(), a.logits.data(), a.targets.data(), rows, v);
}

template float Gpt<float>::forward(const int32_t*, const int32_t*, int64_t);
template double Gpt<double>::forward(const int32_t*, const int32_t*, int64_t);
template float Gpt<float>::forwardStage(int, const StageInput&, float*);
template double Gpt<double>::forwardStage(int, const StageInput&, double*);

}  // namespace megascale::trainer
