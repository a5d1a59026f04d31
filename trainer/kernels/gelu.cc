#include "trainer/kernels/gelu.h"

#include <cmath>

#include "trainer/kernels/fast_math.h"

namespace megascale::trainer {

namespace {
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kCubic = 0.044715;
}  // namespace

template <typename T>
void geluForward(T* out, const T* in, int64_t count) {
  const T a = static_cast<T>(kSqrt2OverPi), b = static_cast<T>(kCubic);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const T x = in[i];
    out[i] = T(0.5) * x * (T(1) + tanhOf(a * (x + b * x * x * x)));
  }
}

template <typename T>
void geluBackward(T* din, const T* dout, const T* in, int64_t count) {
  const T a = static_cast<T>(kSqrt2OverPi), b = static_cast<T>(kCubic);
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const T x = in[i];
    const T t = tanhOf(a * (x + b * x * x * x));
    const T dt = a * (T(1) + T(3) * b * x * x) * (T(1) - t * t);
    din[i] = dout[i] * (T(0.5) * (T(1) + t) + T(0.5) * x * dt);
  }
}

template void geluForward<float>(float*, const float*, int64_t);
template void geluForward<double>(double*, const double*, int64_t);
template void geluBackward<float>(float*, const float*, const float*, int64_t);
template void geluBackward<double>(double*, const double*, const double*, int64_t);

}  // namespace megascale::trainer
