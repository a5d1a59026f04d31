// The attention kernels, written once for a vector width. attention.cc includes this in namespace
// attention_avx2 (32-byte vectors); attention_avx512.cc includes it in namespace attention_avx512 (64-byte
// vectors, compiled for AVX-512); attention.cc picks one at run time. Define MEGASCALE_ATTENTION_VECTOR_BYTES
// before including, inside the target namespace, after the standard headers.
//
// Tiles: a block of query rows meets a tile of keys. The key (and value) tile is transposed to [hd][kTile], so
// scores for all keys of a row come out of broadcast-FMAs across keys with no horizontal sums; outputs and
// gradients are accumulated with broadcast-FMAs across the head dimension. Every inner loop keeps 8
// independent vector accumulators (enough FMA chains to cover the latency on two FMA ports) in registers:
// GCC vector types, since plain arrays were spilled to the stack.

// 16 x 16: a sliding window cuts into fewer masked scores than with 32 x 32 tiles, and full causal attention
// lost nothing (one core of a Zen 4, fwd + bwd, 4 heads of 64: batch 8 x seq 128, window 64: 22.9 -> 19.2 ms;
// window 128: 27.8 -> 24.3; batch 2 x seq 512: 88.9 -> 86.4; the AVX2 build 27.2 -> 21.7 and 105 -> 94).
constexpr int64_t kTile = 16;
constexpr int64_t kQueryBlock = 16;
constexpr int64_t kVectorBytes = MEGASCALE_ATTENTION_VECTOR_BYTES;

template <typename T>
struct VectorOf;
template <>
struct VectorOf<float> {
  typedef float type __attribute__((vector_size(kVectorBytes)));
};
template <>
struct VectorOf<double> {
  typedef double type __attribute__((vector_size(kVectorBytes)));
};
template <typename T>
using Vec = typename VectorOf<T>::type;
template <typename T>
constexpr int64_t kLanes = kVectorBytes / static_cast<int64_t>(sizeof(T));

template <typename T>
inline Vec<T> load(const T* p) {
  Vec<T> v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
template <typename T>
inline void store(T* p, Vec<T> v) {
  __builtin_memcpy(p, &v, sizeof(v));
}

struct Rows {
  int64_t first, last;  // keys a query may see: [max(0, i - window + 1), i]
};
inline Rows visible(int64_t i, int64_t window) { return {i - window + 1 > 0 ? i - window + 1 : 0, i}; }

template <typename T>
T dot(const T* a, const T* b, int64_t n) {
  T sum = 0;
  for (int64_t d = 0; d < n; ++d) sum += a[d] * b[d];
  return sum;
}

// out[d] += sum_i weights[i * weight_stride] * rows[i * row_stride + d] for NV vectors of d, with the terms
// split over P = 8 / NV parities of i so that 8 accumulator chains run side by side.
template <typename T, int NV>
void addWeightedRowsChunk(T* out, const T* weights, int64_t weight_stride, const T* rows, int64_t row_stride,
                          int64_t count) {
  constexpr int P = 8 / NV;
  constexpr int64_t L = kLanes<T>;
  Vec<T> acc[P][NV] = {};
  int64_t i = 0;
  for (; i + P <= count; i += P) {
#pragma GCC unroll 8
    for (int p = 0; p < P; ++p) {
      const T w = weights[(i + p) * weight_stride];
      const T* r = rows + (i + p) * row_stride;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[p][v] += w * load(r + v * L);
    }
  }
  for (; i < count; ++i) {
    const T w = weights[i * weight_stride];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[0][v] += w * load(rows + i * row_stride + v * L);
  }
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    Vec<T> sum = acc[0][v];
#pragma GCC unroll 8
    for (int p = 1; p < P; ++p) sum += acc[p][v];
    store(out + v * L, load(out + v * L) + sum);
  }
}

template <typename T>
void addWeightedRows(T* out, const T* weights, int64_t weight_stride, const T* rows, int64_t row_stride,
                     int64_t count, int64_t hd) {
  constexpr int64_t L = kLanes<T>;
  int64_t d0 = 0;
  // 8 vectors at a time where the registers allow it (32 zmm; AVX2's 16 ymm take 8 plus temporaries).
  if constexpr (kVectorBytes == 32) {
    for (; d0 + 8 * L <= hd; d0 += 8 * L) addWeightedRowsChunk<T, 8>(out + d0, weights, weight_stride, rows + d0, row_stride, count);
  }
  for (; d0 + 4 * L <= hd; d0 += 4 * L) addWeightedRowsChunk<T, 4>(out + d0, weights, weight_stride, rows + d0, row_stride, count);
  for (; d0 + L <= hd; d0 += L) addWeightedRowsChunk<T, 1>(out + d0, weights, weight_stride, rows + d0, row_stride, count);
  for (int64_t i = 0; i < count && d0 < hd; ++i) {
    for (int64_t d = d0; d < hd; ++d) out[d] += weights[i * weight_stride] * rows[i * row_stride + d];
  }
}

// Rows j0 .. j0+count of a [seq, stride] matrix, as [hd][kTile] (zero-padded).
template <typename T>
void transposeTile(T* out, const T* base, int64_t stride, int64_t j0, int64_t count, int64_t hd) {
  for (int64_t d = 0; d < hd; ++d) {
    T* row = out + d * kTile;
    for (int64_t j = 0; j < kTile; ++j) row[j] = j < count ? base[(j0 + j) * stride + d] : T(0);
  }
}

// scores[r][j] = x_r . key_j for R rows at once (they share each load of the tile); R * kTile / lanes = 8
// accumulators.
template <typename T>
constexpr int kRowsPerPass = static_cast<int>(8 / (kTile / kLanes<T>)) > 0 ? static_cast<int>(8 / (kTile / kLanes<T>)) : 1;

template <typename T>
void rowsTimesTile(T* const* scores, const T* const* x, const T* tile_t, int64_t hd) {
  constexpr int64_t L = kLanes<T>, V = kTile / L;
  constexpr int R = kRowsPerPass<T>;
  Vec<T> acc[R][V] = {};
  for (int64_t d = 0; d < hd; ++d) {
    const T* row = tile_t + d * kTile;
    Vec<T> k[V];
#pragma GCC unroll 8
    for (int64_t v = 0; v < V; ++v) k[v] = load(row + v * L);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const T xr = x[r][d];
#pragma GCC unroll 8
      for (int64_t v = 0; v < V; ++v) acc[r][v] += xr * k[v];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 8
    for (int64_t v = 0; v < V; ++v) store(scores[r] + v * L, acc[r][v]);
  }
}

// Scores of rows [i, i + R) clipped to `end` (repeats of the last row fill the pass), into out + row * kTile.
template <typename T>
void scoreRows(T* out, const T* base, int64_t stride, int64_t i, int64_t end, int64_t first_row, const T* tile_t,
               int64_t hd) {
  constexpr int R = kRowsPerPass<T>;
  T* scores[R];
  const T* x[R];
  for (int r = 0; r < R; ++r) {
    const int64_t row = i + r < end ? i + r : end - 1;
    scores[r] = out + (row - first_row) * kTile;
    x[r] = base + row * stride;
  }
  rowsTimesTile(scores, x, tile_t, hd);
}

template <typename T>
struct TileBuffers {
  TileBuffers(int64_t hd, int64_t rows)
      : keys_t(static_cast<size_t>(hd * kTile)),
        values_t(static_cast<size_t>(hd * kTile)),
        p(static_cast<size_t>(kQueryBlock * kTile)),
        ds(static_cast<size_t>(kQueryBlock * kTile)),
        top(static_cast<size_t>(rows)),
        sum(static_cast<size_t>(rows)),
        acc(static_cast<size_t>(rows * hd)) {}
  std::vector<T> keys_t, values_t, p, ds, top, sum, acc;
};

template <typename T>
void forward(T* out, T* lse, const T* qkv, const AttentionShape& s) {
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
          const int64_t i0 = blk * kQueryBlock, i1 = i0 + kQueryBlock < s.seq ? i0 + kQueryBlock : s.seq;
          for (int64_t r = 0; r < kQueryBlock; ++r) {
            buf.top[static_cast<size_t>(r)] = minus_infinity;
            buf.sum[static_cast<size_t>(r)] = T(0);
          }
          for (auto& a : buf.acc) a = T(0);
          for (int64_t j0 = visible(i0, s.window).first / kTile * kTile; j0 < i1; j0 += kTile) {
            const int64_t count = kTile < i1 - j0 ? kTile : i1 - j0;
            transposeTile(buf.keys_t.data(), k_base, stride, j0, count, hd);
            for (int64_t i = i0; i < i1; i += kRowsPerPass<T>) {
              scoreRows(buf.p.data(), q_base, stride, i, i1, i0, buf.keys_t.data(), hd);
            }
            for (int64_t i = i0; i < i1; ++i) {
              const Rows r = visible(i, s.window);
              const int64_t lo = (r.first > j0 ? r.first : j0) - j0;
              const int64_t hi = (r.last < j0 + count - 1 ? r.last : j0 + count - 1) - j0;
              if (lo > hi) continue;
              T* scores = buf.p.data() + (i - i0) * kTile;
              T tile_top = buf.top[i - i0];
              for (int64_t j = lo; j <= hi; ++j) tile_top = scores[j] * scale > tile_top ? scores[j] * scale : tile_top;
              const T correction = expOf(buf.top[i - i0] - tile_top);
              T* acc = buf.acc.data() + (i - i0) * hd;
              T sum = buf.sum[i - i0] * correction;
              for (int64_t d = 0; d < hd; ++d) acc[d] *= correction;
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
void backward(T* dqkv, const T* dout, const T* qkv, const T* out, const T* lse, const AttentionShape& s) {
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
        const T* o_base = out + b * s.seq * c + h * hd;
        const T* do_base = dout + b * s.seq * c + h * hd;
        T* dq_base = dqkv + b * s.seq * stride + h * hd;
        T* dk_base = dq_base + c;
        T* dv_base = dq_base + 2 * c;
        const T* row_lse = lse + (b * s.heads + h) * s.seq;
        T* d_rows = buf.sum.data();  // D_i for every query row
        for (int64_t i = 0; i < s.seq; ++i) {
          d_rows[i] = dot(do_base + i * c, o_base + i * c, hd);
          for (int part = 0; part < 3; ++part) {
            T* row = dq_base + i * stride + part * c;
            for (int64_t d = 0; d < hd; ++d) row[d] = T(0);
          }
        }
        for (int64_t j0 = 0; j0 < s.seq; j0 += kTile) {
          const int64_t count = kTile < s.seq - j0 ? kTile : s.seq - j0;
          transposeTile(buf.keys_t.data(), k_base, stride, j0, count, hd);
          transposeTile(buf.values_t.data(), v_base, stride, j0, count, hd);
          const int64_t reach = j0 + count - 1 + s.window - 1;
          const int64_t last_query = reach < s.seq - 1 ? reach : s.seq - 1;
          for (int64_t i0 = j0; i0 <= last_query; i0 += kQueryBlock) {
            const int64_t rows = kQueryBlock < last_query + 1 - i0 ? kQueryBlock : last_query + 1 - i0;
            // P and dS for this block x tile; keys a query cannot see hold zeros.
            for (int64_t i = i0; i < i0 + rows; i += kRowsPerPass<T>) {
              scoreRows(buf.p.data(), q_base, stride, i, i0 + rows, i0, buf.keys_t.data(), hd);
              scoreRows(buf.ds.data(), do_base, c, i, i0 + rows, i0, buf.values_t.data(), hd);
            }
            for (int64_t i = i0; i < i0 + rows; ++i) {
              T* p = buf.p.data() + (i - i0) * kTile;
              T* ds = buf.ds.data() + (i - i0) * kTile;
              const Rows r = visible(i, s.window);
              const int64_t lo = (r.first > j0 ? r.first : j0) - j0;
              const int64_t hi = (r.last < j0 + count - 1 ? r.last : j0 + count - 1) - j0;
              const T lse_i = row_lse[i], d_i = d_rows[i];
              for (int64_t j = 0; j < kTile; ++j) {
                const T pj = (j >= lo && j <= hi) ? expOf(p[j] * scale - lse_i) : T(0);
                ds[j] = pj * (ds[j] - d_i) * scale;
                p[j] = pj;
              }
            }
            for (int64_t j = 0; j < count; ++j) {
              addWeightedRows(dv_base + (j0 + j) * stride, buf.p.data() + j, kTile, do_base + i0 * c, c, rows, hd);
              addWeightedRows(dk_base + (j0 + j) * stride, buf.ds.data() + j, kTile, q_base + i0 * stride, stride,
                              rows, hd);
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
