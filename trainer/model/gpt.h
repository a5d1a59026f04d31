// The GPT: parameters and gradients in flat buffers described by the parameter table, activations saved
// for backward, forward and backward over this slice's layers. T is float for training and double for
// the oracle tests against PyTorch and finite differences.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/kernels/linear.h"
#include "trainer/model/activations.h"
#include "trainer/model/model_config.h"
#include "trainer/model/parameters.h"

namespace megascale::trainer {

template <typename T>
class Gpt {
 public:
  /// Throws std::invalid_argument for a bad config or slice.
  explicit Gpt(const ModelConfig& config, const ModelSlice& slice = {});

  const ModelConfig& config() const { return config_; }
  const std::vector<ParamSpec>& parameterTable() const { return table_; }
  int64_t parameterCount() const { return static_cast<int64_t>(params_.size()); }
  T* parameters() { return params_.data(); }
  const T* parameters() const { return params_.data(); }
  T* gradients() { return grads_.data(); }
  const T* gradients() const { return grads_.data(); }

  /// GPT-2 initialization from `seed`: weights N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)),
  /// LayerNorm gains 1, biases 0.
  void initialize(uint64_t seed);

  /// Runs the model on tokens [batch, seq_len] and returns the mean cross-entropy against targets
  /// (same shape). Throws std::invalid_argument for a token outside the vocabulary.
  T forward(const int32_t* inputs, const int32_t* targets, int64_t batch);

  /// Adds dLoss/dparams to gradients() for the last forward().
  void backward();

  void zeroGradients();

  /// Runs the GEMMs in bf16 (float models only; the CPU needs bf16 compute, see cpuHasBf16Compute()).
  /// Throws std::invalid_argument otherwise.
  void setPrecision(Precision precision);
  Precision precision() const { return precision_; }

  /// Logits [batch * seq_len, vocab] of the last forward().
  const T* logits() const { return act_.logits.data(); }

 private:
  void forwardLayer(int64_t l, const T* x, T* y);
  void backwardLayer(int64_t l, const T* x, T* dresid);
  void forwardHead(const int32_t* targets);
  void backwardHead();
  void checkTokens(const int32_t* tokens, const char* what) const;
  // y (=/+=) x W + b in the model's precision; x_b holds x rounded to bf16 (filled when round_x).
  void project(T* y, const T* x, std::vector<bf16>& x_b, bool round_x, const T* w, const T* b, const LinearShape& s,
               bool accumulate);
  void projectBackward(T* dx, T* dw, T* db, const T* dy, const T* x, const std::vector<bf16>& x_b, const T* w,
                       const LinearShape& s, bool accumulate_dx);
  const bf16* roundedWeight(const T* w) const { return weights_b_.data() + (w - params_.data()); }

  ModelConfig config_;
  ModelSlice slice_;
  std::vector<ParamSpec> table_;
  std::vector<T> params_, grads_;
  GlobalParams<T> p_{}, g_{};
  std::vector<LayerParams<T>> lp_, lg_;
  Activations<T> act_;
  std::vector<int32_t> inputs_, targets_;
  int64_t batch_ = 0;
  Precision precision_ = Precision::kFp32;
  std::vector<bf16> weights_b_;  // bf16 precision: every parameter rounded, refreshed at each forward()
};

}  // namespace megascale::trainer
