// The nccl-tests table: header lines and rows, shared by our *_perf tools and the baselines (MPI, Gloo), so
// every program prints columns that bench/compare.sh can read side by side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>

namespace megascale::bench {

struct Measurement {
  double time_us = 0;
  double algbw = 0;  // GB/s, 1 GB = 1e9 B
  double busbw = 0;
  int64_t wrong = -1;  // -1: not checked ("N/A")
};

void printColumnHeader(FILE* out);
/// One row; in_place == nullptr prints N/A in the in-place columns.
void printRow(FILE* out, size_t bytes, size_t count, const char* type, const char* redop, int root,
              const Measurement& out_of_place, const Measurement* in_place);

/// algbw and busbw from bytes S, time and the collective's factor.
Measurement measurement(double bytes, double time_us, double busbw_factor, int64_t wrong);

}  // namespace megascale::bench
