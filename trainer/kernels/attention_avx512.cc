// The attention kernels compiled for AVX-512 (64-byte vectors); attention.cc calls them when the CPU has it.
// The standard headers come first, so their inline functions stay generic code; only what follows the
// target pragma, in its own namespace, uses AVX-512 instructions.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "trainer/kernels/attention.h"
#include "trainer/kernels/fast_math.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq")

namespace megascale::trainer::attention_avx512 {

#define MEGASCALE_ATTENTION_VECTOR_BYTES 64
#include "trainer/kernels/attention_impl.h"
#undef MEGASCALE_ATTENTION_VECTOR_BYTES

void forward(float* out, float* lse, const float* qkv, const AttentionShape& s) { forward<float>(out, lse, qkv, s); }
void backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
              const AttentionShape& s) {
  backward<float>(dqkv, dout, qkv, out, lse, s);
}

}  // namespace megascale::trainer::attention_avx512

#pragma GCC pop_options
