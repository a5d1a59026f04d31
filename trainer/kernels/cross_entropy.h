// Softmax cross-entropy over the vocabulary, fused: forward keeps each row's log-sum-exp, backward turns
// logits into dlogits = (softmax - onehot) * scale in one pass without a probability tensor.
#pragma once

#include <cstdint>

namespace megascale::trainer {

/// losses[n] = lse[n] - logits[n, targets[n]], with lse[n] = log sum_v exp(logits[n, v]).
template <typename T>
void crossEntropyForward(T* losses, T* lse, const T* logits, const int32_t* targets, int64_t rows, int64_t vocab);

/// dlogits[n, v] = (exp(logits[n,v] - lse[n]) - [v == targets[n]]) * scale (dlogits may alias logits).
template <typename T>
void crossEntropyBackward(T* dlogits, const T* logits, const T* lse, const int32_t* targets, T scale, int64_t rows,
                          int64_t vocab);

}  // namespace megascale::trainer
