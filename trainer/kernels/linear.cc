#include "trainer/kernels/linear.h"

#include <algorithm>

#include "trainer/kernels/gemm.h"
#include "trainer/kernels/gemm_bf16.h"
#include "trainer/kernels/parallel.h"

namespace megascale::trainer {

namespace {

// The bias goes into y first and the GEMM accumulates onto it: one pass over y instead of two. Returns the
// GEMM's beta.
template <typename T>
T placeBias(T* y, const T* bias, const LinearShape& s, bool accumulate) {
  if (bias == nullptr) return accumulate ? T(1) : T(0);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.rows; ++r) {
    T* row = y + r * s.out;
    if (accumulate) {
      for (int64_t c = 0; c < s.out; ++c) row[c] += bias[c];
    } else {
      std::copy(bias, bias + s.out, row);
    }
  }
  return T(1);
}

}  // namespace

template <typename T>
void linearForward(T* y, const T* x, const T* weight, const T* bias, const LinearShape& s, bool accumulate) {
  const T beta = placeBias(y, bias, s, accumulate);
  gemm(GemmCall<T>{Trans::kNo, Trans::kNo, s.rows, s.out, s.in, x, s.in, weight, s.out, beta, y, s.out});
}

void linearForwardBf16(float* y, const bf16* x, const bf16* weight, const float* bias, const LinearShape& s,
                       bool accumulate) {
  const float beta = placeBias(y, bias, s, accumulate);
  gemmBf16(GemmBf16Call{Trans::kNo, Trans::kNo, s.rows, s.out, s.in, x, s.in, weight, s.out, beta, y, s.out});
}

void linearInputGradBf16(float* dx, const bf16* dy_b, const bf16* weight, const LinearShape& s, bool accumulate_dx) {
  gemmBf16(GemmBf16Call{Trans::kNo, Trans::kYes, s.rows, s.in, s.out, dy_b, s.out, weight, s.out,
                        accumulate_dx ? 1.0f : 0.0f, dx, s.in});
}

void linearWeightGradBf16(float* dweight, float* dbias, const float* dy, const bf16* dy_b, const bf16* x,
                          const LinearShape& s) {
  gemmBf16(GemmBf16Call{Trans::kYes, Trans::kNo, s.in, s.out, s.rows, x, s.in, dy_b, s.out, 1.0f, dweight, s.out});
  if (dbias != nullptr) addColumnSums(dbias, dy, s.rows, s.out);
}

void linearBackwardBf16(float* dx, float* dweight, float* dbias, const float* dy, bf16* dy_scratch, const bf16* x,
                        const bf16* weight, const LinearShape& s, bool accumulate_dx) {
  convertToBf16(dy_scratch, dy, s.rows * s.out);
  if (dx != nullptr) linearInputGradBf16(dx, dy_scratch, weight, s, accumulate_dx);
  linearWeightGradBf16(dweight, dbias, dy, dy_scratch, x, s);
}

template <typename T>
void linearInputGrad(T* dx, const T* dy, const T* weight, const LinearShape& s, bool accumulate_dx) {
  gemm(GemmCall<T>{Trans::kNo, Trans::kYes, s.rows, s.in, s.out, dy, s.out, weight, s.out,
                   accumulate_dx ? T(1) : T(0), dx, s.in});
}

template <typename T>
void linearWeightGrad(T* dweight, T* dbias, const T* dy, const T* x, const LinearShape& s) {
  gemm(GemmCall<T>{Trans::kYes, Trans::kNo, s.in, s.out, s.rows, x, s.in, dy, s.out, T(1), dweight, s.out});
  if (dbias != nullptr) addColumnSums(dbias, dy, s.rows, s.out);
}

template <typename T>
void linearBackward(T* dx, T* dweight, T* dbias, const T* dy, const T* x, const T* weight, const LinearShape& s,
                    bool accumulate_dx) {
  if (dx != nullptr) linearInputGrad(dx, dy, weight, s, accumulate_dx);
  linearWeightGrad(dweight, dbias, dy, x, s);
}

template <typename T>
void addColumnSums(T* out, const T* in, int64_t rows, int64_t columns) {
  PerThreadSums<T> partial(columns);
#pragma omp parallel
  {
    T* mine = partial.mine();
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = in + r * columns;
#pragma omp simd
      for (int64_t c = 0; c < columns; ++c) mine[c] += row[c];
    }
  }
  partial.addTo(out, 0, columns);
}

template void linearForward<float>(float*, const float*, const float*, const float*, const LinearShape&, bool);
template void linearForward<double>(double*, const double*, const double*, const double*, const LinearShape&,
                                    bool);
template void linearBackward<float>(float*, float*, float*, const float*, const float*, const float*,
                                    const LinearShape&, bool);
template void linearBackward<double>(double*, double*, double*, const double*, const double*, const double*,
                                     const LinearShape&, bool);
template void linearInputGrad<float>(float*, const float*, const float*, const LinearShape&, bool);
template void linearInputGrad<double>(double*, const double*, const double*, const LinearShape&, bool);
template void linearWeightGrad<float>(float*, float*, const float*, const float*, const LinearShape&);
template void linearWeightGrad<double>(double*, double*, const double*, const double*, const LinearShape&);
template void addColumnSums<float>(float*, const float*, int64_t, int64_t);
template void addColumnSums<double>(double*, const double*, int64_t, int64_t);

}  // namespace megascale::trainer
