#include "trainer/kernels/embedding.h"

#include <omp.h>

#include <algorithm>

namespace megascale::trainer {

template <typename T>
void embeddingForward(T* out, const int32_t* tokens, const T* wte, const T* wpe, int64_t rows, int64_t first_row,
                      int64_t seq, int64_t channels) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < rows; ++n) {
    const T* token_row = wte + static_cast<int64_t>(tokens[n]) * channels;
    const T* position_row = wpe + ((first_row + n) % seq) * channels;
    T* y = out + n * channels;
#pragma omp simd
    for (int64_t c = 0; c < channels; ++c) y[c] = token_row[c] + position_row[c];
  }
}

template <typename T>
void embeddingBackward(T* dwte, T* dwpe, const T* dout, const int32_t* tokens, int64_t rows, int64_t first_row,
                       int64_t seq, int64_t channels) {
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t per = (channels + threads - 1) / threads;
    const int64_t c0 = std::min(channels, me * per), c1 = std::min(channels, c0 + per);
    for (int64_t n = 0; n < rows; ++n) {
      const T* dy = dout + n * channels;
      T* token_row = dwte + static_cast<int64_t>(tokens[n]) * channels;
      T* position_row = dwpe + ((first_row + n) % seq) * channels;
      for (int64_t c = c0; c < c1; ++c) {
        token_row[c] += dy[c];
        position_row[c] += dy[c];
      }
    }
  }
}

template void embeddingForward<float>(float*, const int32_t*, const float*, const float*, int64_t, int64_t, int64_t,
                                      int64_t);
template void embeddingForward<double>(double*, const int32_t*, const double*, const double*, int64_t, int64_t,
                                       int64_t, int64_t);
template void embeddingBackward<float>(float*, float*, const float*, const int32_t*, int64_t, int64_t, int64_t,
                                       int64_t);
template void embeddingBackward<double>(double*, double*, const double*, const int32_t*, int64_t, int64_t, int64_t,
                                        int64_t);

}  // namespace megascale::trainer
