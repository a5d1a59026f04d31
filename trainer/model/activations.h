// What forward saves for backward: one Activations per micro-batch in flight (a pipeline stage keeps several
// until their backward runs), plus the backward scratch every layer reuses. With tensor parallelism T the
// token rows are split: N = batch x seq rows in all, R = N / T of them in this rank's sequence shard. Inside
// the tensor-parallel regions (between an all-gather and a reduce-scatter) tensors have all N rows and 1/T of
// the columns; outside them, R rows and all C columns.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/kernels/bf16.h"
#include "trainer/model/model_config.h"

namespace megascale::trainer {

template <typename T>
struct LayerActivations {
  std::vector<T> ln1, ln1_mean, ln1_rstd;  // [N, C] gathered (this rank's rows written by LN), [R], [R]
  std::vector<T> qkv;                      // [N, 3C/T]
  std::vector<T> att, att_lse;             // [N, C/T], [B, H/T, S]
  std::vector<T> resid1;                   // [R, C]  serial block: x + attention branch
  std::vector<T> ln2, ln2_mean, ln2_rstd;  // serial block only, shaped as ln1
  std::vector<T> fc, fc_gelu;              // [N, 4C/T] before and after GELU
  // bf16 precision: the GEMM inputs above, rounded once in forward and reused by the weight gradients.
  std::vector<bf16> ln1_b, att_b, ln2_b, fc_gelu_b;
};

template <typename T>
struct Activations {
  int64_t batch = 0;
  bool awaiting_backward = false;        // forward ran, backward has not
  std::vector<int32_t> tokens, targets;  // this rank's R rows (first stage / last stage)
  T loss_scale = 0;                      // dLoss/d(per-token loss) of this micro-batch
  std::vector<std::vector<T>> resid;     // resid[l] = input of local layer l [R, C]; resid[L] = the stage output
  std::vector<LayerActivations<T>> layers;
  std::vector<T> lnf, lnf_mean, lnf_rstd;  // [R, C]
  std::vector<T> logits, lse, losses;      // [R, V], [R], [R]
  std::vector<bf16> lnf_b;                 // bf16: lnf rounded

  void resize(const ModelConfig& c, int tp_size, int64_t layer_count, int64_t batch, Precision precision,
              bool has_head);
};

/// Backward's working buffers, shared by every layer and micro-batch.
template <typename T>
struct BackwardScratch {
  std::vector<T> dresid, dln;        // [R, C]: d(residual stream), d(LayerNorm output) of the shard
  std::vector<T> dy_full;            // [N, C]: the gathered output gradient (tensor parallelism only)
  std::vector<T> dqkv, datt, dfc, dfc_gelu;  // [N, 3C/T], [N, C/T], [N, 4C/T], [N, 4C/T]
  std::vector<T> dlogits;            // [R, V]
  // bf16: rounded output gradients of the GEMMs whose weight gradients run after their input gradients.
  std::vector<bf16> dy_b, dqkv_b, dfc_b, dlogits_b;

  void resize(const ModelConfig& c, int tp_size, int64_t batch, Precision precision, bool has_head);
};

}  // namespace megascale::trainer
