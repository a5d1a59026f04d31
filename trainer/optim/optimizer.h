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

/// The per-element math of one optimizer step, shared by the whole-model Optimizer and the sharded one
/// (ZeRO), which applies it to pieces of tensors.
template <typename T>
struct AdamCoefficients {
  T b1, b2, eps, correction1, correction2;
  /// For the `step`-th update (1-based).
  AdamCoefficients(const OptimizerConfig& config, int64_t step);
};

/// AdamW on n elements: moments updated, p decayed (decoupled) and moved.
template <typename T>
void adamwUpdate(T* p, const T* g, T* m, T* v, int64_t n, const AdamCoefficients<T>& c, T lr, T decay);

/// LAMB, first half: moments updated; adds sum p^2 and sum u^2 (u = Adam direction + decay p) to the norms.
template <typename T>
void lambMoments(const T* p, const T* g, T* m, T* v, int64_t n, const AdamCoefficients<T>& c, T decay,
                 double& weight_norm_sq, double& update_norm_sq);
/// LAMB, second half: p -= scale u, with scale = lr x trust ratio of the whole tensor.
template <typename T>
void lambApply(T* p, const T* m, const T* v, int64_t n, const AdamCoefficients<T>& c, T decay, T scale);
/// lr x ||p|| / ||u|| (lr alone when either norm is 0).
double lambScale(double lr, double weight_norm_sq, double update_norm_sq);

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
