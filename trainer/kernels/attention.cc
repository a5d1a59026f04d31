#include "trainer/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace megascale::trainer {

namespace {

constexpr int64_t kKeyTile = 64;
constexpr int64_t kQueryBlock = 16;

template <typename T>
T dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

template <typename T>
void axpy(T* y, T alpha, const T* x, int64_t n) {
#pragma omp simd
  for (int64_t d = 0; d < n; ++d) y[d] += alpha * x[d];
}

int64_t firstKey(int64_t query, int64_t window) { return std::max<int64_t>(0, query - window + 1); }

// One query row against its window, tile by tile, with running max `top`, normalizer `sum` and output `acc`.
template <typename T>
void attendRow(T* out_row, T* lse_value, const T* q, const T* keys, const T* values, int64_t row_stride,
               int64_t first, int64_t last, int64_t hd, T scale, T* scores, T* acc) {
  T top = -std::numeric_limits<T>::infinity(), sum = 0;
  std::fill(acc, acc + hd, T(0));
  for (int64_t j0 = first; j0 <= last; j0 += kKeyTile) {
    const int64_t j1 = std::min(last + 1, j0 + kKeyTile);
    T tile_top = top;
    for (int64_t j = j0; j < j1; ++j) {
      scores[j - j0] = dot(q, keys + j * row_stride, hd) * scale;
      tile_top = std::max(tile_top, scores[j - j0]);
    }
    const T correction = std::exp(top - tile_top);
    sum *= correction;
#pragma omp simd
    for (int64_t d = 0; d < hd; ++d) acc[d] *= correction;
    for (int64_t j = j0; j < j1; ++j) {
      const T p = std::exp(scores[j - j0] - tile_top);
      sum += p;
      axpy(acc, p, values + j * row_stride, hd);
    }
    top = tile_top;
  }
  const T inverse = T(1) / sum;
  for (int64_t d = 0; d < hd; ++d) out_row[d] = acc[d] * inverse;
  *lse_value = top + std::log(sum);
}

}  // namespace

template <typename T>
void attentionForward(T* out, T* lse, const T* qkv, const AttentionShape& s) {
  const int64_t c = s.channels(), hd = s.head_dim, stride = 3 * c;
  const int64_t blocks = (s.seq + kQueryBlock - 1) / kQueryBlock;
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
#pragma omp parallel
  {
    std::vector<T> scores(kKeyTile), acc(static_cast<size_t>(hd));
#pragma omp for schedule(dynamic, 1) collapse(3)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < s.heads; ++h) {
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const T* base = qkv + b * s.seq * stride + h * hd;
          for (int64_t i = blk * kQueryBlock; i < std::min(s.seq, (blk + 1) * kQueryBlock); ++i) {
            attendRow(out + (b * s.seq + i) * c + h * hd, lse + (b * s.heads + h) * s.seq + i, base + i * stride,
                      base + c, base + 2 * c, stride, firstKey(i, s.window), i, hd, scale, scores.data(), acc.data());
          }
        }
      }
    }
  }
}

// With P = softmax(S), dS = P * (dP - D) where dP = dO V^T and D_i = dO_i . O_i; dQ = dS K * scale,
// dK = dS^T Q * scale, dV = P^T dO.
template <typename T>
void attentionBackward(T* dqkv, const T* dout, const T* qkv, const T* out, const T* lse, const AttentionShape& s) {
  const int64_t c = s.channels(), hd = s.head_dim, stride = 3 * c;
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
#pragma omp parallel for schedule(dynamic, 1) collapse(2)
  for (int64_t b = 0; b < s.batch; ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const T* base = qkv + b * s.seq * stride + h * hd;
      T* dbase = dqkv + b * s.seq * stride + h * hd;
      for (int64_t i = 0; i < s.seq; ++i) {
        for (int part = 0; part < 3; ++part) std::fill_n(dbase + i * stride + part * c, hd, T(0));
      }
      const T* row_lse = lse + (b * s.heads + h) * s.seq;
      for (int64_t i = 0; i < s.seq; ++i) {
        const T* q = base + i * stride;
        const T* dO = dout + (b * s.seq + i) * c + h * hd;
        const T d_i = dot(dO, out + (b * s.seq + i) * c + h * hd, hd);
        T* dq = dbase + i * stride;
        for (int64_t j = firstKey(i, s.window); j <= i; ++j) {
          const T* k = base + j * stride + c;
          const T* v = base + j * stride + 2 * c;
          const T p = std::exp(dot(q, k, hd) * scale - row_lse[i]);
          const T ds = p * (dot(dO, v, hd) - d_i) * scale;
          axpy(dbase + j * stride + 2 * c, p, dO, hd);
          axpy(dq, ds, k, hd);
          axpy(dbase + j * stride + c, ds, q, hd);
        }
      }
    }
  }
}

template void attentionForward<float>(float*, float*, const float*, const AttentionShape&);
template void attentionForward<double>(double*, double*, const double*, const AttentionShape&);
template void attentionBackward<float>(float*, const float*, const float*, const float*, const float*,
                                       const AttentionShape&);
template void attentionBackward<double>(double*, const double*, const double*, const double*, const double*,
                                        const AttentionShape&);

}  // namespace megascale::trainer
