#include "trainer/optim/optimizer.h"

#include <cmath>
#include <stdexcept>

#include "trainer/kernels/parallel.h"

namespace megascale::trainer {

OptimizerKind parseOptimizerKind(const std::string& text) {
  if (text == "adamw") return OptimizerKind::kAdamW;
  if (text == "lamb") return OptimizerKind::kLamb;
  throw std::invalid_argument("--optimizer must be 'adamw' or 'lamb', not '" + text + "'");
}

const char* optimizerKindName(OptimizerKind kind) { return kind == OptimizerKind::kAdamW ? "adamw" : "lamb"; }

double LrSchedule::at(int64_t step) const {
  if (step < warmup) return max_lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double span = static_cast<double>(std::max<int64_t>(1, total - warmup));
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / span);
  return min_lr + 0.5 * (1.0 + std::cos(3.141592653589793 * progress)) * (max_lr - min_lr);
}

template <typename T>
Optimizer<T>::Optimizer(const OptimizerConfig& config, std::vector<ParamSpec> table)
    : config_(config), table_(std::move(table)) {
  const auto count = static_cast<size_t>(parameterCount(table_));
  m_.assign(count, T(0));
  v_.assign(count, T(0));
}

template <typename T>
AdamCoefficients<T>::AdamCoefficients(const OptimizerConfig& config, int64_t step)
    : b1(static_cast<T>(config.beta1)),
      b2(static_cast<T>(config.beta2)),
      eps(static_cast<T>(config.epsilon)),
      correction1(T(1) - static_cast<T>(std::pow(config.beta1, static_cast<double>(step)))),
      correction2(T(1) - static_cast<T>(std::pow(config.beta2, static_cast<double>(step)))) {}

// `if (parallel : ...)` keeps the simd on for pieces under the threshold (see convertToBf16).
template <typename T>
void adamwUpdate(T* p, const T* g, T* m, T* v, int64_t n, const AdamCoefficients<T>& c, T lr, T decay) {
#pragma omp parallel for simd schedule(static) if (parallel : n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    m[i] = c.b1 * m[i] + (T(1) - c.b1) * g[i];
    v[i] = c.b2 * v[i] + (T(1) - c.b2) * g[i] * g[i];
    p[i] *= T(1) - lr * decay;
    p[i] -= lr * (m[i] / c.correction1) / (std::sqrt(v[i] / c.correction2) + c.eps);
  }
}

template <typename T>
void lambMoments(const T* p, const T* g, T* m, T* v, int64_t n, const AdamCoefficients<T>& c, T decay,
                 double& weight_norm_sq, double& update_norm_sq) {
  for (int64_t i = 0; i < n; ++i) {
    m[i] = c.b1 * m[i] + (T(1) - c.b1) * g[i];
    v[i] = c.b2 * v[i] + (T(1) - c.b2) * g[i] * g[i];
    const T u = (m[i] / c.correction1) / (std::sqrt(v[i] / c.correction2) + c.eps) + decay * p[i];
    weight_norm_sq += static_cast<double>(p[i]) * static_cast<double>(p[i]);
    update_norm_sq += static_cast<double>(u) * static_cast<double>(u);
  }
}

template <typename T>
void lambApply(T* p, const T* m, const T* v, int64_t n, const AdamCoefficients<T>& c, T decay, T scale) {
  for (int64_t i = 0; i < n; ++i) {
    const T u = (m[i] / c.correction1) / (std::sqrt(v[i] / c.correction2) + c.eps) + decay * p[i];
    p[i] -= scale * u;
  }
}

double lambScale(double lr, double weight_norm_sq, double update_norm_sq) {
  const double weight_norm = std::sqrt(weight_norm_sq), update_norm = std::sqrt(update_norm_sq);
  return lr * ((weight_norm > 0 && update_norm > 0) ? weight_norm / update_norm : 1.0);
}

template <typename T>
void Optimizer<T>::step(T* params, const T* grads, double lr) {
  ++steps_;
  const AdamCoefficients<T> c(config_, steps_);
  for (const ParamSpec& spec : table_) {
    T* p = params + spec.offset;
    const T* g = grads + spec.offset;
    T* m = m_.data() + spec.offset;
    T* v = v_.data() + spec.offset;
    const int64_t n = spec.size();
    const T decay = spec.weight_decay ? static_cast<T>(config_.weight_decay) : T(0);
    if (config_.kind == OptimizerKind::kAdamW) {
      adamwUpdate(p, g, m, v, n, c, static_cast<T>(lr), decay);
      continue;
    }
    // LAMB: u = adam direction + decay * p, scaled per tensor by ||p|| / ||u||.
    double weight_norm_sq = 0, update_norm_sq = 0;
    lambMoments(p, g, m, v, n, c, decay, weight_norm_sq, update_norm_sq);
    lambApply(p, m, v, n, c, decay, static_cast<T>(lambScale(lr, weight_norm_sq, update_norm_sq)));
  }
}

template <typename T>
double clipGradientNorm(T* grads, int64_t count, double max_norm) {
  const double norm = std::sqrt(deterministicSum(count, [grads](int64_t i) {
    return static_cast<double>(grads[i]) * static_cast<double>(grads[i]);
  }));
  if (max_norm > 0) {
    const double coefficient = max_norm / (norm + 1e-6);
    if (coefficient < 1.0) {
      const T c = static_cast<T>(coefficient);
#pragma omp parallel for simd schedule(static)
      for (int64_t i = 0; i < count; ++i) grads[i] *= c;
    }
  }
  return norm;
}

template struct AdamCoefficients<float>;
template struct AdamCoefficients<double>;
template void adamwUpdate<float>(float*, const float*, float*, float*, int64_t, const AdamCoefficients<float>&, float,
                                 float);
template void adamwUpdate<double>(double*, const double*, double*, double*, int64_t, const AdamCoefficients<double>&,
                                  double, double);
template void lambMoments<float>(const float*, const float*, float*, float*, int64_t, const AdamCoefficients<float>&,
                                 float, double&, double&);
template void lambMoments<double>(const double*, const double*, double*, double*, int64_t,
                                  const AdamCoefficients<double>&, double, double&, double&);
template void lambApply<float>(float*, const float*, const float*, int64_t, const AdamCoefficients<float>&, float,
                               float);
template void lambApply<double>(double*, const double*, const double*, int64_t, const AdamCoefficients<double>&,
                                double, double);
template class Optimizer<float>;
template class Optimizer<double>;
template double clipGradientNorm<float>(float*, int64_t, double);
template double clipGradientNorm<double>(double*, int64_t, double);

}  // namespace megascale::trainer
