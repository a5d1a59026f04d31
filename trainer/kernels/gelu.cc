#include "trainer/kernels/gelu.h"

#include <cmath>

#include "trainer/kernels/fast_math.h"

namespace megascale::trainer {

namespace gelu_avx2 {
#include "trainer/kernels/gelu_impl.h"
}  // namespace gelu_avx2

namespace gelu_avx512 {
void forwardFloat(float* out, const float* in, int64_t count);
void backwardFloat(float* din, const float* dout, const float* in, int64_t count);
}  // namespace gelu_avx512

namespace {
bool avx512_allowed = true;
bool useAvx512() {
  static const bool present = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
  return present && avx512_allowed;
}
}  // namespace

void useAvx512Gelu(bool allowed) { avx512_allowed = allowed; }

template <typename T>
void geluForward(T* out, const T* in, int64_t count) {
  if constexpr (sizeof(T) == sizeof(float)) {
    if (useAvx512()) return gelu_avx512::forwardFloat(out, in, count);
  }
  gelu_avx2::forward(out, in, count);
}

template <typename T>
void geluBackward(T* din, const T* dout, const T* in, int64_t count) {
  if constexpr (sizeof(T) == sizeof(float)) {
    if (useAvx512()) return gelu_avx512::backwardFloat(din, dout, in, count);
  }
  gelu_avx2::backward(din, dout, in, count);
}

template void geluForward<float>(float*, const float*, int64_t);
template void geluForward<double>(double*, const double*, int64_t);
template void geluBackward<float>(float*, const float*, const float*, int64_t);
template void geluBackward<double>(double*, const double*, const double*, int64_t);

}  // namespace megascale::trainer
