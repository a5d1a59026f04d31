// Causal self-attention with a sliding window, flash-style: query row i attends to keys
// max(0, i - window + 1) .. i, visited in tiles with an online softmax, so no seq x seq matrix exists.
// Only the output and each row's log-sum-exp are saved; backward recomputes the probabilities from them.
#pragma once

#include <cstdint>

namespace megascale::trainer {

struct AttentionShape {
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;
  int64_t window = 0;  // >= seq means full causal attention
  int64_t channels() const { return heads * head_dim; }
};

/// qkv [B, T, 3C] (q | k | v, head h in columns h*hd..); out [B, T, C]; lse [B, H, T].
template <typename T>
void attentionForward(T* out, T* lse, const T* qkv, const AttentionShape& s);

/// dqkv [B, T, 3C] is overwritten. Parallel over (batch, head): each task owns its columns of dqkv.
template <typename T>
void attentionBackward(T* dqkv, const T* dout, const T* qkv, const T* out, const T* lse, const AttentionShape& s);

/// Float kernels use AVX-512 when the CPU has it; tests force the AVX2 build to cover both.
void useAvx512Attention(bool allowed);

}  // namespace megascale::trainer
