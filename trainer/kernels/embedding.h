// Token + learned position embedding. Token ids are checked by the caller (the model) against the vocabulary.
#pragma once

#include <cstdint>

namespace megascale::trainer {

/// out[b,t,:] = wte[tokens[b,t], :] + wpe[t, :]; tokens [batch, seq], tables [vocab, C] and [seq_max, C].
template <typename T>
void embeddingForward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t batch, int64_t seq,
                      int64_t channels);

/// dwte[tokens[b,t], :] += dout[b,t,:]; dwpe[t,:] += dout[b,t,:]. Threads split the channels, so every
/// element has one writer and the sum order is fixed.
template <typename T>
void embeddingBackward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int64_t batch, int64_t seq,
                       int64_t channels);

}  // namespace megascale::trainer
