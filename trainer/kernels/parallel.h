// Helpers for deterministic multi-threaded reductions: each OpenMP thread sums into its own buffer and the
// buffers are added in thread order, so a fixed thread count gives bit-identical results run to run.
#pragma once

#include <omp.h>

#include <cstdint>
#include <vector>

namespace megascale::trainer {

template <typename T>
class PerThreadSums {
 public:
  explicit PerThreadSums(int64_t width)
      : width_(width), sums_(static_cast<size_t>(width * omp_get_max_threads()), T(0)) {}

  /// This thread's buffer; call inside the parallel region.
  T* mine() { return sums_.data() + omp_get_thread_num() * width_; }

  /// out[i] += sum over threads of buffer[offset + i], for i < count.
  void addTo(T* out, int64_t offset, int64_t count) const {
    const int64_t threads = static_cast<int64_t>(sums_.size()) / width_;
    for (int64_t t = 0; t < threads; ++t) {
      const T* part = sums_.data() + t * width_ + offset;
      for (int64_t i = 0; i < count; ++i) out[i] += part[i];
    }
  }

 private:
  int64_t width_;
  std::vector<T> sums_;
};

/// sum over i < count of term(i), in double, split into per-thread static ranges added in thread order.
/// Within a range, 8 running sums take every 8th term: independent chains the compiler vectorizes (one chain
/// waited on the add's latency for every term), in an order fixed by the code, so still bit-identical.
template <typename Term>
double deterministicSum(int64_t count, Term term) {
  constexpr int kChains = 8;
  std::vector<double> partial(static_cast<size_t>(omp_get_max_threads()), 0.0);
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), me = omp_get_thread_num();
    const int64_t begin = count * me / threads, end = count * (me + 1) / threads;
    double chains[kChains] = {};
    int64_t i = begin;
    for (; i + kChains <= end; i += kChains) {
#pragma GCC unroll 8
      for (int c = 0; c < kChains; ++c) chains[c] += term(i + c);
    }
    for (; i < end; ++i) chains[0] += term(i);
    partial[static_cast<size_t>(me)] =
        ((chains[0] + chains[1]) + (chains[2] + chains[3])) + ((chains[4] + chains[5]) + (chains[6] + chains[7]));
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

}  // namespace megascale::trainer
