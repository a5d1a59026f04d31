// Command line of the baseline programs: the collective, then nccl-tests' size and iteration flags.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/byte_size.h"

namespace megascale::bench {

struct BaselineOptions {
  std::string collective;  // all_reduce, all_gather, reduce_scatter
  std::string algorithm;   // gloo: ring_chunked or halving_doubling (all-reduce)
  size_t min_bytes = 8, max_bytes = 64 << 20;
  double factor = 2;
  int iters = 20, warmup = 2;
};

/// Input element i of rank: small integers, so every sum is exact in fp32 whatever the order.
inline float baselineValue(int rank, size_t i) {
  return static_cast<float>((i * 7 + static_cast<size_t>(rank) * 3) % 8);
}

inline size_t parseBaselineSize(const char* text) {
  size_t bytes = 0;
  if (!parseByteSize(text, &bytes)) {
    std::fprintf(stderr, "invalid size '%s'\n", text);
    std::exit(2);
  }
  return bytes;
}

/// usage: prog COLLECTIVE [-a ALGO] [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
inline BaselineOptions parseBaselineOptions(int argc, char** argv) {
  BaselineOptions o;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s all_reduce|all_gather|reduce_scatter [-a algo] [-b min] [-e max] [-f factor] "
                 "[-n iters] [-w warmup]\n", argv[0]);
    std::exit(2);
  }
  o.collective = argv[1];
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    const char* v = argv[i + 1];
    if (flag == "-a") o.algorithm = v;
    else if (flag == "-b") o.min_bytes = parseBaselineSize(v);
    else if (flag == "-e") o.max_bytes = parseBaselineSize(v);
    else if (flag == "-f") o.factor = std::atof(v);
    else if (flag == "-n") o.iters = std::atoi(v);
    else if (flag == "-w") o.warmup = std::atoi(v);
    else {
      std::fprintf(stderr, "%s: unknown flag %s\n", argv[0], flag.c_str());
      std::exit(2);
    }
  }
  if (o.factor <= 1 || o.iters < 1 || o.max_bytes < o.min_bytes) {
    std::fprintf(stderr, "%s: bad sizes or iterations\n", argv[0]);
    std::exit(2);
  }
  return o;
}

}  // namespace megascale::bench
