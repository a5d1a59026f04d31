// Central finite differences in double precision: the oracle for every backward pass.
#pragma once

#include <cmath>
#include <functional>
#include <vector>

namespace megascale::trainer::testing {

/// Largest |analytic - numeric| / max(1e-3, |numeric|) over the first `samples` indices picked evenly
/// from x (all of them when samples >= x.size()). `loss` is evaluated with x perturbed in place.
inline double worstGradientError(const std::function<double()>& loss, std::vector<double>& x,
                                 const std::vector<double>& analytic, size_t samples = 1u << 30,
                                 double step = 1e-5) {
  double worst = 0;
  const size_t stride = x.size() <= samples ? 1 : x.size() / samples;
  for (size_t i = 0; i < x.size(); i += stride) {
    const double saved = x[i];
    x[i] = saved + step;
    const double up = loss();
    x[i] = saved - step;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2 * step);
    worst = std::max(worst, std::abs(analytic[i] - numeric) / std::max(1e-3, std::abs(numeric)));
  }
  return worst;
}

/// Deterministic values in [-scale, scale).
inline std::vector<double> pseudoRandom(size_t n, unsigned seed, double scale = 1.0) {
  std::vector<double> out(n);
  unsigned long long s = seed * 2654435761ull + 12345;
  for (auto& v : out) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v = (static_cast<double>(s >> 11) * 0x1.0p-53 * 2 - 1) * scale;
  }
  return out;
}

}  // namespace megascale::trainer::testing
