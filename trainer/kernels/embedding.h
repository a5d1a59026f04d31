// Token + learned position embedding. Token ids are checked by the caller (the model) against the vocabulary.
#pragma once

#include <cstdint>

namespace megascale::trainer {

/// Rows are tokens of [batch, seq] flattened; a caller may pass a contiguous run of them (a sequence-parallel
/// shard): `rows` rows starting at flattened row `first_row`, so row n sits at position (first_row + n) % seq.

/// out[n,:] = wte[tokens[n], :] + wpe[position(n), :]; tables [vocab, C] and [seq_max, C].
template <typename T>
void embeddingForward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t rows, int64_t first_row,
                      int64_t seq, int64_t channels);

/// dwte[tokens[n], :] += dout[n,:]; dwpe[position(n),:] += dout[n,:]. Threads split the channels, so every
/// element has one writer and the sum order is fixed.
template <typename T>
void embeddingBackward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int64_t rows, int64_t first_row,
                       int64_t seq, int64_t channels);

}  // namespace megascale::trainer
