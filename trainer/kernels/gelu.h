// GELU, tanh approximation (GPT-2's): one tanh per element in forward, and the backward recomputes it from
// the saved input instead of storing a second activation.
#pragma once

#include <cstdint>

namespace megascale::trainer {

/// out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
template <typename T>
void geluForward(T* out, const T* in, int64_t count);

/// din = dout * gelu'(in) (overwrites din).
template <typename T>
void geluBackward(T* din, const T* dout, const T* in, int64_t count);

/// Lets the float loops use their AVX-512 build where the CPU has it (the default), or not (tests).
void useAvx512Gelu(bool allowed);

}  // namespace megascale::trainer
