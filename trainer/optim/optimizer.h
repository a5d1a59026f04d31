// AdamW and LAMB over the flat parameter buffer, tensor by tensor (LAMB's trust ratio and the weight-decay
// mask follow the parameter table), plus global-norm gradient clipping and the warmup + cosine schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/model/parameters.h"

namespace megascale::trainer {

enum class OptimizerKind { kAdamW, kLamb };
OptimizerKind parseOptimizerKind(const std::string& text);  // "adamw" | "lamb"; throws std::invalid_argument
const char* optimizerKindName(OptimizerKind kind);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdamW;
  double beta1 = 0.9, beta2 = 0.95, epsilon = 1e-8;
  double weight_decay = 0.1;  // decoupled; only tensors the table marks for decay
  double clip_norm = 1.0;     // global gradient-norm limit; 0 turns clipping off
};

/// lr(step): linear warmup over `warmup` steps to max_lr, then cosine to min_lr at `total` steps.
struct LrSchedule {
  double max_lr = 3e-4, min_lr = 3e-5;
  int64_t warmup = 0, total = 1;
  double at(int64_t step) const;
};

template <typename T>
class Optimizer {
 public:
  Optimizer(const OptimizerConfig& config, std::vector<ParamSpec> table);

  /// One update with learning rate lr. Adam moments are bias-corrected with the step count.
  void step(T* params, const T* grads, double lr);

  int64_t steps() const { return steps_; }
  const OptimizerConfig& config() const { return config_; }
  /// The moments, for checkpoints: m then v, each the size of the parameter buffer.
  std::vector<T>& firstMoment() { return m_; }
  std::vector<T>& secondMoment() { return v_; }
  void setSteps(int64_t steps) { steps_ = steps; }

 private:
  OptimizerConfig config_;
  std::vector<ParamSpec> table_;
  std::vector<T> m_, v_;
  int64_t steps_ = 0;
};

/// Scales grads so their global L2 norm is at most max_norm (PyTorch's clip_grad_norm_ rule:
/// coefficient max_norm / (norm + 1e-6) when below 1). Returns the norm before clipping.
template <typename T>
double clipGradientNorm(T* grads, int64_t count, double max_norm);

}  // namespace megascale::trainer
