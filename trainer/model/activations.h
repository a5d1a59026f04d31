// What forward saves for backward, per layer, plus the backward scratch buffers reused by every layer.
// Sized for one (batch, seq_len); resized when the batch changes.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/kernels/bf16.h"
#include "trainer/model/model_config.h"

namespace megascale::trainer {

template <typename T>
struct LayerActivations {
  std::vector<T> ln1, ln1_mean, ln1_rstd;  // [N, C], [N], [N]
  std::vector<T> qkv;                      // [N, 3C/tp]
  std::vector<T> att, att_lse;             // [N, C/tp], [B, H/tp, T]
  std::vector<T> resid1;                   // [N, C]  serial block: x + attention branch
  std::vector<T> ln2, ln2_mean, ln2_rstd;  // serial block only
  std::vector<T> fc, fc_gelu;              // [N, 4C/tp] before and after GELU
  // bf16 precision: the GEMM inputs above, rounded once in forward and reused by the weight gradients.
  std::vector<bf16> ln1_b, att_b, ln2_b, fc_gelu_b;
};

template <typename T>
struct Activations {
  std::vector<std::vector<T>> resid;  // resid[l] = input of local layer l; resid[L] = output of the last one
  std::vector<LayerActivations<T>> layers;
  std::vector<T> lnf, lnf_mean, lnf_rstd;  // [N, C]
  std::vector<T> logits, lse, losses;      // [N, V], [N], [N]
  // Backward scratch.
  std::vector<T> dresid, dln, dqkv, datt, dfc, dfc_gelu, dlogits;
  // bf16 precision: lnf rounded, and the rounded output gradient of whichever GEMM runs.
  std::vector<bf16> lnf_b, dy_b;

  void resize(const ModelConfig& c, int tp_size, int64_t layer_count, int64_t batch, Precision precision);
};

}  // namespace megascale::trainer
