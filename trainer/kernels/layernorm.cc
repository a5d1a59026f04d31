#include "trainer/kernels/layernorm.h"

#include <omp.h>

#include <cmath>
#include <vector>

#include "trainer/kernels/parallel.h"

namespace megascale::trainer {

template <typename T>
void layerNormForward(T* out, T* mean, T* rstd, const T* in, const T* gamma, const T* beta, int64_t rows,
                      int64_t channels) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < rows; ++n) {
    const T* x = in + n * channels;
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < channels; ++c) sum += x[c];
    const T m = sum / static_cast<T>(channels);
    T squares = 0;
#pragma omp simd reduction(+ : squares)
    for (int64_t c = 0; c < channels; ++c) squares += (x[c] - m) * (x[c] - m);
    const T s = T(1) / std::sqrt(squares / static_cast<T>(channels) + static_cast<T>(kLayerNormEpsilon));
    T* y = out + n * channels;
#pragma omp simd
    for (int64_t c = 0; c < channels; ++c) y[c] = (x[c] - m) * s * gamma[c] + beta[c];
    mean[n] = m;
    rstd[n] = s;
  }
}

// dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), with dxhat = dy * gamma.
template <typename T>
void layerNormBackward(T* din, T* dgamma, T* dbeta, const T* dout, const T* in, const T* mean, const T* rstd,
                       const T* gamma, int64_t rows, int64_t channels) {
  PerThreadSums<T> partial(2 * channels);
#pragma omp parallel
  {
    T* my_dgamma = partial.mine();
    T* my_dbeta = my_dgamma + channels;
#pragma omp for schedule(static)
    for (int64_t n = 0; n < rows; ++n) {
      const T* x = in + n * channels;
      const T* dy = dout + n * channels;
      const T m = mean[n], s = rstd[n];
      T mean_dxhat = 0, mean_dxhat_xhat = 0;
#pragma omp simd reduction(+ : mean_dxhat, mean_dxhat_xhat)
      for (int64_t c = 0; c < channels; ++c) {
        const T dxhat = dy[c] * gamma[c];
        mean_dxhat += dxhat;
        mean_dxhat_xhat += dxhat * (x[c] - m) * s;
      }
      mean_dxhat /= static_cast<T>(channels);
      mean_dxhat_xhat /= static_cast<T>(channels);
      T* dx = din + n * channels;
#pragma omp simd
      for (int64_t c = 0; c < channels; ++c) {
        const T xhat = (x[c] - m) * s;
        my_dgamma[c] += dy[c] * xhat;
        my_dbeta[c] += dy[c];
        dx[c] += s * (dy[c] * gamma[c] - mean_dxhat - xhat * mean_dxhat_xhat);
      }
    }
  }
  partial.addTo(dgamma, 0, channels);
  partial.addTo(dbeta, channels, channels);
}

template void layerNormForward<float>(float*, float*, float*, const float*, const float*, const float*, int64_t,
                                      int64_t);
template void layerNormForward<double>(double*, double*, double*, const double*, const double*, const double*,
                                       int64_t, int64_t);
template void layerNormBackward<float>(float*, float*, float*, const float*, const float*, const float*, const float*,
                                       const float*, int64_t, int64_t);
template void layerNormBackward<double>(double*, double*, double*, const double*, const double*, const double*,
                                        const double*, const double*, int64_t, int64_t);

}  // namespace megascale::trainer
