// Linear layers, y = x W + b with W stored [in, out] (row-major), shaped for tensor parallelism:
// a column-parallel layer holds W[:, out-shard] and b[out-shard]; a row-parallel layer holds W[in-shard, :]
// and adds its bias once (on TP rank 0) after the partial sums are combined. With one rank both are the
// plain layer; the shard bookkeeping lives in the model's parameter table.
#pragma once

#include <cstdint>

#include "trainer/kernels/bf16.h"

namespace megascale::trainer {

struct LinearShape {
  int64_t rows = 0;  // tokens: batch x sequence
  int64_t in = 0;    // local input features
  int64_t out = 0;   // local output features
};

/// y[rows,out] (= or += when accumulate) x[rows,in] W[in,out] + bias[out] (bias may be null).
template <typename T>
void linearForward(T* y, const T* x, const T* weight, const T* bias, const LinearShape& s, bool accumulate);

/// dx (= or += when accumulate_dx; skipped when dx is null) dy W^T; dweight += x^T dy; dbias += sum_rows dy.
template <typename T>
void linearBackward(T* dx, T* dweight, T* dbias, const T* dy, const T* x, const T* weight, const LinearShape& s,
                    bool accumulate_dx);

/// The two halves of linearBackward, for callers that overlap them with communication:
/// dx (= or +=) dy W^T over s.rows rows, and dweight += x^T dy, dbias += sum_rows dy.
template <typename T>
void linearInputGrad(T* dx, const T* dy, const T* weight, const LinearShape& s, bool accumulate_dx);
template <typename T>
void linearWeightGrad(T* dweight, T* dbias, const T* dy, const T* x, const LinearShape& s);

/// Mixed precision: x and W in bf16, y and the bias in float (fp32 accumulation).
void linearForwardBf16(float* y, const bf16* x, const bf16* weight, const float* bias, const LinearShape& s,
                       bool accumulate);

/// Mixed precision backward: dy (float) is rounded into dy_scratch [rows, out] first; gradients stay float.
void linearBackwardBf16(float* dx, float* dweight, float* dbias, const float* dy, bf16* dy_scratch, const bf16* x,
                        const bf16* weight, const LinearShape& s, bool accumulate_dx);

/// The halves of linearBackwardBf16 with dy already rounded (dy_b); dbias sums the float dy.
void linearInputGradBf16(float* dx, const bf16* dy_b, const bf16* weight, const LinearShape& s, bool accumulate_dx);
void linearWeightGradBf16(float* dweight, float* dbias, const float* dy, const bf16* dy_b, const bf16* x,
                          const LinearShape& s);

/// out[c] += sum over rows of in[r, c].
template <typename T>
void addColumnSums(T* out, const T* in, int64_t rows, int64_t columns);

}  // namespace megascale::trainer
