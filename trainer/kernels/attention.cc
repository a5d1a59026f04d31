#include "trainer/kernels/attention.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "trainer/kernels/fast_math.h"

namespace megascale::trainer {

namespace attention_avx2 {
#define MEGASCALE_ATTENTION_VECTOR_BYTES 32
#include "trainer/kernels/attention_impl.h"
#undef MEGASCALE_ATTENTION_VECTOR_BYTES
}  // namespace attention_avx2

namespace attention_avx512 {
void forward(float* out, float* lse, const float* qkv, const AttentionShape& s);
void backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
              const AttentionShape& s);
}  // namespace attention_avx512

namespace {
bool avx512_allowed = true;
bool useAvx512() {
  static const bool present = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
  return present && avx512_allowed;
}
}  // namespace

void useAvx512Attention(bool allowed) { avx512_allowed = allowed; }

template <typename T>
void attentionForward(T* out, T* lse, const T* qkv, const AttentionShape& s) {
  if constexpr (sizeof(T) == sizeof(float)) {
    if (useAvx512()) return attention_avx512::forward(out, lse, qkv, s);
  }
  attention_avx2::forward(out, lse, qkv, s);
}

template <typename T>
void attentionBackward(T* dqkv, const T* dout, const T* qkv, const T* out, const T* lse, const AttentionShape& s) {
  if constexpr (sizeof(T) == sizeof(float)) {
    if (useAvx512()) return attention_avx512::backward(dqkv, dout, qkv, out, lse, s);
  }
  attention_avx2::backward(dqkv, dout, qkv, out, lse, s);
}

template void attentionForward<float>(float*, float*, const float*, const AttentionShape&);
template void attentionForward<double>(double*, double*, const double*, const AttentionShape&);
template void attentionBackward<float>(float*, const float*, const float*, const float*, const float*,
                                       const AttentionShape&);
template void attentionBackward<double>(double*, const double*, const double*, const double*, const double*,
                                        const AttentionShape&);

}  // namespace megascale::trainer
