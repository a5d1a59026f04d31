// Fused LayerNorm: one pass for the statistics, one for normalize-scale-shift; backward in one pass per row
// from the saved mean and 1/std (the input is re-read, not the normalized output).
#pragma once

#include <cstdint>

namespace megascale::trainer {

/// out[n,c] = (in - mean) * rstd * gamma + beta, with mean[n] and rstd[n] saved for backward.
template <typename T>
void layerNormForward(T* out, T* mean, T* rstd, const T* in, const T* gamma, const T* beta, int64_t rows,
                      int64_t channels);

/// din += dL/din; dgamma += and dbeta += their sums over rows (deterministic for a fixed thread count).
template <typename T>
void layerNormBackward(T* din, T* dgamma, T* dbeta, const T* dout, const T* in, const T* mean, const T* rstd,
                       const T* gamma, int64_t rows, int64_t channels);

inline constexpr double kLayerNormEpsilon = 1e-5;

}  // namespace megascale::trainer
