// The float GELU loops (gelu_impl.h) compiled for AVX-512 (gelu.cc calls them when the CPU has it); the standard
// headers and fast_math.h come before the target pragma, as in attention_avx512.cc.
#include <cstdint>

#include "trainer/kernels/fast_math.h"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq")

namespace megascale::trainer::gelu_avx512 {

#include "trainer/kernels/gelu_impl.h"

void forwardFloat(float* out, const float* in, int64_t count) { forward<float>(out, in, count); }
void backwardFloat(float* din, const float* dout, const float* in, int64_t count) {
  backward<float>(din, dout, in, count);
}

}  // namespace megascale::trainer::gelu_avx512

#pragma GCC pop_options
