#include "trainer/kernels/attention.h"

#include <algorithm>
#include <cstring>
#include <cmath>

#include "trainer/kernels/fast_math.h"
#include <limits>
#include <vector>

namespace megascale::trainer {

namespace {

// Tiles: a block of query rows meets a tile of keys. The key (and value) tile is transposed to [hd][kTile]
// so scores for all keys of a row come out of broadcast-FMAs across keys, with no horizontal sums; outputs
// and gradients are accumulated with broadcast-FMAs across the head dimension.
constexpr int64_t kTile = 32;
constexpr int64_t kQueryBlock = 32;

struct Rows {
  int64_t first, last;  // keys a query may see: [max(0, i - window + 1), i]
};
Rows visible(int64_t i, int64_t window) { return {std::max<int64_t>(0, i - window + 1), i}; }

template <typename T>
T dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// 32-byte vectors (GCC vector extensions): the loops below keep their accumulators in registers, which
// plain arrays did not (GCC spilled them to the stack and serialized every FMA on a store-forward).
template <typename T>
struct VectorOf;
template <>
struct VectorOf<float> {
  typedef float type __attribute__((vector_size(32)));
};
template <>
struct VectorOf<double> {
  typedef double type __attribute__((vector_size(32)));
};
template <typename T>
using Vec = typename VectorOf<T>::type;
template <typename T>
constexpr int64_t kLanes = 32 / static_cast<int64_t>(sizeof(T));

template <typename T>
Vec<T> load(const T* p) {
  Vec<T> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <typename T>
void store(T* p, Vec<T> v) {
  std::memcpy(p, &v, sizeof(v));
}

// out[d] += sum_i weights[i * weight_stride] * rows[i * row_stride + d]. Eight vector accumulators (64
// floats) per pass: enough independent FMA chains to cover the FMA latency on both ports.
template <typename T>
void addWeightedRows(T* out, const T* weights, int64_t weight_stride, const T* rows, int64_t row_stride,
                     int64_t count, int64_t hd) {
  constexpr int64_t L = kLanes<T>;
  int64_t d0 = 0;
  for (; d0 + 8 * L <= hd; d0 += 8 * L) {
    Vec<T> acc[8] = {};
    for (int64_t i = 0; i < count; ++i) {
      const T w = weights[i * weight_stride];
      const T* r = rows + i * row_stride + d0;
#pragma GCC unroll 8
      for (int v = 0; v < 8; ++v) acc[v] += w * load(r + v * L);
    }
#pragma GCC unroll 8
    for (int v = 0; v < 8; ++v) store(out + d0 + v * L, load(out + d0 + v * L) + acc[v]);
  }
  for (; d0 + L <= hd; d0 += L) {
    Vec<T> acc = {};
    for (int64_t i = 0; i < count; ++i) acc += weights[i * weight_stride] * load(rows + i * row_stride + d0);
    store(out + d0, load(out + d0) + acc);
  }
  for (int64_t i = 0; i < count && d0 < hd; ++i) {
    for (int64_t d = d0; d < hd; ++d) out[d] += weights[i * weight_stride] * rows[i * row_stride + d];
  }
}

// Rows j0.. j0+count of a [seq, stride] matrix at column offset, as [hd][kTile] (zero-padded).
template <typename T>
void transposeTile(T* out, const T* base, int64_t stride, int64_t j0, int64_t count, int64_t hd) {
  for (int64_t d = 0; d < hd; ++d) {
    T* row = out + d * kTile;
    for (int64_t j = 0; j < kTile; ++j) row[j] = j < count ? base[(j0 + j) * stride + d] : T(0);
  }
}

// scores_a[j] = qa . key_j and scores_b[j] = qb . key_j for the tile, from the transposed keys: two query
// rows share each load of the tile, and their kTile / lanes accumulators each are independent FMA chains.
template <typename T>
void rowsTimesTile(T* scores_a, T* scores_b, const T* qa, const T* qb, const T* tile_t, int64_t hd) {
  constexpr int64_t L = kLanes<T>, V = kTile / L;
  Vec<T> a[V] = {}, b[V] = {};
  for (int64_t d = 0; d < hd; ++d) {
    const T xa = qa[d], xb = qb[d];
    const T* row = tile_t + d * kTile;
#pragma GCC unroll 8
    for (int64_t v = 0; v < V; ++v) {
      const Vec<T> k = load(row + v * L);
      a[v] += xa * k;
      b[v] += xb * k;
    }
  }
#pragma GCC unroll 8
  for (int64_t v = 0; v < V; ++v) {
    store(scores_a + v * L, a[v]);
    store(scores_b + v * L, b[v]);
  }
}

template <typename T>
struct TileBuffers {
  explicit TileBuffers(int64_t hd, int64_t rows)
      : keys_t(static_cast<size_t>(hd * kTile)),
        values_t(static_cast<size_t>(hd * kTile)),
        scores(kTile),
        second(kTile),
        p(static_cast<size_t>(kQueryBlock * kTile)),
        ds(static_cast<size_t>(kQueryBlock * kTile)),
        top(static_cast<size_t>(rows)),
        sum(static_cast<size_t>(rows)),
        acc(static_cast<size_t>(rows * hd)) {}
  std::vector<T> keys_t, values_t, scores, second, p, ds, top, sum, acc;
};


}  // namespace

template <typename T>
void attentionForward(T* out, T* lse, const T* qkv, const AttentionShape& s) {
  const int64_t c = s.channels(), hd = s.head_dim, stride = 3 * c;
  const int64_t blocks = (s.seq + kQueryBlock - 1) / kQueryBlock;
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
  const T minus_infinity = -std::numeric_limits<T>::infinity();
#pragma omp parallel
  {
    TileBuffers<T> buf(hd, kQueryBlock);
#pragma omp for schedule(dynamic, 1) collapse(3)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < s.heads; ++h) {
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const T* q_base = qkv + b * s.seq * stride + h * hd;
          const T* k_base = q_base + c;
          const T* v_base = q_base + 2 * c;
          const int64_t i0 = blk * kQueryBlock, i1 = std::min(s.seq, i0 + kQueryBlock);
          std::fill(buf.top.begin(), buf.top.end(), minus_infinity);
          std::fill(buf.sum.begin(), buf.sum.end(), T(0));
          std::fill(buf.acc.begin(), buf.acc.end(), T(0));
          for (int64_t j0 = visible(i0, s.window).first / kTile * kTile; j0 < i1; j0 += kTile) {
            const int64_t count = std::min(kTile, i1 - j0);
            transposeTile(buf.keys_t.data(), k_base, stride, j0, count, hd);
            for (int64_t i = i0; i < i1; ++i) {
              if ((i - i0) % 2 == 0) {  // scores for this row and the next in one pass over the tile
                const int64_t i2 = std::min(i + 1, i1 - 1);
                rowsTimesTile(buf.scores.data(), buf.second.data(), q_base + i * stride, q_base + i2 * stride,
                              buf.keys_t.data(), hd);
              }
              const Rows r = visible(i, s.window);
              const int64_t lo = std::max(r.first, j0) - j0, hi = std::min(r.last, j0 + count - 1) - j0;
              if (lo > hi) continue;
              T* scores = (i - i0) % 2 == 0 ? buf.scores.data() : buf.second.data();
              T tile_top = buf.top[i - i0];
              for (int64_t j = lo; j <= hi; ++j) tile_top = std::max(tile_top, scores[j] * scale);
              const T correction = expOf(buf.top[i - i0] - tile_top);
              T* acc = buf.acc.data() + (i - i0) * hd;
              T sum = buf.sum[i - i0] * correction;
#pragma omp simd
              for (int64_t d = 0; d < hd; ++d) acc[d] *= correction;
#pragma omp simd reduction(+ : sum)
              for (int64_t j = 0; j < kTile; ++j) {
                const T p = (j >= lo && j <= hi) ? expOf(scores[j] * scale - tile_top) : T(0);
                scores[j] = p;
                sum += p;
              }
              addWeightedRows(acc, scores + lo, 1, v_base + (j0 + lo) * stride, stride, hi - lo + 1, hd);
              buf.top[i - i0] = tile_top;
              buf.sum[i - i0] = sum;
            }
          }
          for (int64_t i = i0; i < i1; ++i) {
            const T inverse = T(1) / buf.sum[i - i0];
            T* o = out + (b * s.seq + i) * c + h * hd;
            const T* acc = buf.acc.data() + (i - i0) * hd;
            for (int64_t d = 0; d < hd; ++d) o[d] = acc[d] * inverse;
            lse[(b * s.heads + h) * s.seq + i] = buf.top[i - i0] + std::log(buf.sum[i - i0]);
          }
        }
      }
    }
  }
}

// With P = softmax(S), dS = P * (dP - D) where dP = dO V^T and D_i = dO_i . O_i; dQ = dS K * scale,
// dK = dS^T Q * scale, dV = P^T dO. A task owns one (batch, head), so its dK and dV rows have one writer.
template <typename T>
void attentionBackward(T* dqkv, const T* dout, const T* qkv, const T* out, const T* lse, const AttentionShape& s) {
  const int64_t c = s.channels(), hd = s.head_dim, stride = 3 * c;
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
#pragma omp parallel
  {
    TileBuffers<T> buf(hd, s.seq);
#pragma omp for schedule(dynamic, 1) collapse(2)
    for (int64_t b = 0; b < s.batch; ++b) {
      for (int64_t h = 0; h < s.heads; ++h) {
        const T* q_base = qkv + b * s.seq * stride + h * hd;
        const T* k_base = q_base + c;
        const T* v_base = q_base + 2 * c;
        T* dq_base = dqkv + b * s.seq * stride + h * hd;
        T* dk_base = dq_base + c;
        T* dv_base = dq_base + 2 * c;
        const T* row_lse = lse + (b * s.heads + h) * s.seq;
        T* d_rows = buf.sum.data();  // D_i for every query row
        for (int64_t i = 0; i < s.seq; ++i) {
          const T* dO = dout + (b * s.seq + i) * c + h * hd;
          d_rows[i] = dot(dO, out + (b * s.seq + i) * c + h * hd, hd);
          for (int part = 0; part < 3; ++part) std::fill_n(dq_base + i * stride + part * c, hd, T(0));
        }
        for (int64_t j0 = 0; j0 < s.seq; j0 += kTile) {
          const int64_t count = std::min(kTile, s.seq - j0);
          transposeTile(buf.keys_t.data(), k_base, stride, j0, count, hd);
          transposeTile(buf.values_t.data(), v_base, stride, j0, count, hd);
          const int64_t last_query = std::min(s.seq - 1, j0 + count - 1 + s.window - 1);
          for (int64_t i0 = j0; i0 <= last_query; i0 += kQueryBlock) {
            const int64_t rows = std::min(kQueryBlock, last_query + 1 - i0);
            // P and dS for this block x tile; rows or keys a query cannot see hold zeros.
            for (int64_t i = i0; i < i0 + rows; i += 2) {
              const int64_t i2 = std::min(i + 1, i0 + rows - 1);  // an odd last row is computed twice
              rowsTimesTile(buf.p.data() + (i - i0) * kTile, buf.p.data() + (i2 - i0) * kTile, q_base + i * stride,
                            q_base + i2 * stride, buf.keys_t.data(), hd);
              rowsTimesTile(buf.ds.data() + (i - i0) * kTile, buf.ds.data() + (i2 - i0) * kTile,
                            dout + (b * s.seq + i) * c + h * hd, dout + (b * s.seq + i2) * c + h * hd,
                            buf.values_t.data(), hd);
            }
            for (int64_t i = i0; i < i0 + rows; ++i) {
              T* p = buf.p.data() + (i - i0) * kTile;
              T* ds = buf.ds.data() + (i - i0) * kTile;
              const Rows r = visible(i, s.window);
              const int64_t lo = std::max(r.first, j0) - j0, hi = std::min(r.last, j0 + count - 1) - j0;
              const T lse_i = row_lse[i], d_i = d_rows[i];
#pragma omp simd
              for (int64_t j = 0; j < kTile; ++j) {
                const T pj = (j >= lo && j <= hi) ? expOf(p[j] * scale - lse_i) : T(0);
                ds[j] = pj * (ds[j] - d_i) * scale;
                p[j] = pj;
              }
            }
            const T* dO_block = dout + (b * s.seq + i0) * c + h * hd;
            for (int64_t j = 0; j < count; ++j) {
              addWeightedRows(dv_base + (j0 + j) * stride, buf.p.data() + j, kTile, dO_block, c, rows, hd);
              addWeightedRows(dk_base + (j0 + j) * stride, buf.ds.data() + j, kTile, q_base + i0 * stride, stride, rows,
                              hd);
            }
            for (int64_t i = i0; i < i0 + rows; ++i) {
              addWeightedRows(dq_base + i * stride, buf.ds.data() + (i - i0) * kTile, 1, k_base + j0 * stride, stride,
                              count, hd);
            }
          }
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
