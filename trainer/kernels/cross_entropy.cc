#include "trainer/kernels/cross_entropy.h"

#include <cmath>

#include "trainer/kernels/fast_math.h"

namespace megascale::trainer {

template <typename T>
void crossEntropyForward(T* losses, T* lse, const T* logits, const int32_t* targets, int64_t rows, int64_t vocab) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < rows; ++n) {
    const T* z = logits + n * vocab;
    T top = z[0];
#pragma omp simd reduction(max : top)
    for (int64_t v = 0; v < vocab; ++v) top = z[v] > top ? z[v] : top;
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t v = 0; v < vocab; ++v) sum += expOf(z[v] - top);
    lse[n] = top + std::log(sum);
    losses[n] = lse[n] - z[targets[n]];
  }
}

template <typename T>
void crossEntropyBackward(T* dlogits, const T* logits, const T* lse, const int32_t* targets, T scale, int64_t rows,
                          int64_t vocab) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < rows; ++n) {
    const T* z = logits + n * vocab;
    T* dz = dlogits + n * vocab;
    const T row_lse = lse[n];
#pragma omp simd
    for (int64_t v = 0; v < vocab; ++v) dz[v] = expOf(z[v] - row_lse) * scale;
    dz[targets[n]] -= scale;
  }
}

template void crossEntropyForward<float>(float*, float*, const float*, const int32_t*, int64_t, int64_t);
template void crossEntropyForward<double>(double*, double*, const double*, const int32_t*, int64_t, int64_t);
template void crossEntropyBackward<float>(float*, const float*, const float*, const int32_t*, float, int64_t, int64_t);
template void crossEntropyBackward<double>(double*, const double*, const double*, const int32_t*, double, int64_t,
                                           int64_t);

}  // namespace megascale::trainer
