// The GPT: parameters and gradients in flat buffers described by the parameter table, activations saved
// for backward, forward and backward over this slice's layers. T is float for training and double for
// the oracle tests against PyTorch and finite differences.
#pragma once

#include <cstdint>
#include <vector>

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

  /// Logits [batch * seq_len, vocab] of the last forward().
  const T* logits() const { return act_.logits.data(); }

 private:
  void forwardLayer(int64_t l, const T* x, T* y);
  void backwardLayer(int64_t l, const T* x, T* dresid);
  void forwardHead(const int32_t* targets);
  void backwardHead();
  void checkTokens(const int32_t* tokens, const char* what) const;

  ModelConfig config_;
  ModelSlice slice_;
  std::vector<ParamSpec> table_;
  std::vector<T> params_, grads_;
  GlobalParams<T> p_{}, g_{};
  std::vector<LayerParams<T>> lp_, lg_;
  Activations<T> act_;
  std::vector<int32_t> inputs_, targets_;
  int64_t batch_ = 0;
};

}  // namespace megascale::trainer
