// The float GELU loops, written once and compiled per instruction set: gelu.cc includes this in namespace
// gelu_avx2, gelu_avx512.cc in gelu_avx512 under an AVX-512 target (32-byte vectors with AVX-512's
// instructions: on Zen 4 the forward ran 0.51 against 0.71 ns per element, the backward 0.67 against 0.96).
// The tanh form on purpose: x / (1 + e^(-2u)), the same function, let GCC split the clamped exp into a second
// division and ran 1.3-2.9x slower.

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

inline void forward(float* out, const float* in, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const float x = in[i];
    out[i] = 0.5f * x * (1.0f + tanhOf(kSqrt2OverPi * (x + kCubic * x * x * x)));
  }
}

inline void backward(float* din, const float* dout, const float* in, int64_t count) {
#pragma omp parallel for simd schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const float x = in[i];
    const float t = tanhOf(kSqrt2OverPi * (x + kCubic * x * x * x));
    const float dt = kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x) * (1.0f - t * t);
    din[i] = dout[i] * (0.5f * (1.0f + t) + 0.5f * x * dt);
  }
}
