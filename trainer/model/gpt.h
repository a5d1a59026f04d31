// The GPT: parameters and gradients in flat buffers described by the parameter table, activations saved
// for backward, forward and backward over this slice's layers. T is float for training and double for
// the oracle tests against PyTorch and finite differences.
//
// A slice is one pipeline stage (a range of layers, the embedding on the first, the head on the last) of one
// tensor-parallel rank. With tensor parallelism the model runs sequence parallel (trainer/parallel/
// tensor_parallel.h): column-parallel qkv and fc, row-parallel proj and fcproj, everything else on this
// rank's shard of the token rows. A stage keeps the activations of several micro-batches ("slots") until
// their backward: the pipeline schedule decides which.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "trainer/kernels/linear.h"
#include "trainer/model/activations.h"
#include "trainer/model/model_config.h"
#include "trainer/model/parameters.h"
#include "trainer/model/sharding.h"

namespace megascale::trainer {

template <typename T>
class Gpt {
 public:
  /// Throws std::invalid_argument for a bad config or slice. tp: the row sharding over the tensor-parallel
  /// ranks of a slice with tp_size > 1 (float models only; it must outlive the model).
  explicit Gpt(const ModelConfig& config, const ModelSlice& slice = {}, RowSharding* tp = nullptr);

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

  /// The whole model (one stage) on tokens [batch, seq_len]: the mean cross-entropy against targets (same
  /// shape) over every tensor-parallel rank's rows. Throws std::invalid_argument for a token outside the
  /// vocabulary.
  T forward(const int32_t* inputs, const int32_t* targets, int64_t batch);

  /// Adds dLoss/dparams to gradients() for the last forward(), summed over the tensor-parallel group.
  void backward();

  /// What one stage forward reads. The first stage reads tokens, the others activations: this rank's shard
  /// [localRows(batch), d_model] of the previous stage's output. Tokens and targets are the whole micro-batch
  /// [batch, seq_len] (the same on every TP rank); each rank takes its rows.
  struct StageInput {
    const int32_t* tokens = nullptr;
    const T* activations = nullptr;
    const int32_t* targets = nullptr;  // last stage
    int64_t batch = 0;
    T loss_scale = 0;  // last stage: backward starts from loss_scale x d(sum of token losses)
  };
  /// Runs this stage on a micro-batch and keeps its activations in `slot` until backwardStage(slot). Writes
  /// the stage output shard to `output` (all stages but the last) and returns the sum of this rank's token
  /// losses (last stage; 0 elsewhere).
  T forwardStage(int slot, const StageInput& input, T* output);
  /// Adds this micro-batch's parameter gradients (replicated tensors: this rank's part, see
  /// reduceTensorParallelGradients) and writes d(stage input) to input_grad (all stages but the first).
  /// output_grad: d(stage output) shard, null on the last stage.
  void backwardStage(int slot, const T* output_grad, T* input_grad);
  /// Sums the gradients of the tensors every TP rank holds whole (LayerNorms, row-parallel biases,
  /// embeddings) across the group: each rank computed them on its own token rows.
  void reduceTensorParallelGradients();
  /// A run [begin, end) of the flat parameter (and gradient) buffer: the tensors one GEMM of a layer reads (with
  /// the LayerNorm before it), the embedding's, the head's. The data-parallel optimizer hangs its buckets on
  /// these: the finer they are, the sooner the first gather lands and the last reduction leaves.
  struct ParamRange {
    int64_t begin = 0, end = 0;
    bool operator==(const ParamRange&) const = default;
  };
  /// The ranges in the order one backwardStage finishes their gradients.
  std::vector<ParamRange> gradientOrder() const;
  /// before_use(range) runs before a forward first reads the range's parameters; gradients_done(range) after a
  /// backward has added its last contribution to the range's gradients. Either may be empty.
  void setParameterHooks(std::function<void(ParamRange)> before_use, std::function<void(ParamRange)> gradients_done);

  /// bf16 precision: rounds the weights of one range (parameters that just arrived).
  void refreshRoundedWeights(ParamRange range);
  /// bf16 precision: the rounded weights of one range, given already rounded (parameters that arrived in bf16;
  /// the float parameters hold their widened values).
  void setRoundedWeights(ParamRange range, const bf16* rounded);

  /// Token rows of this rank's sequence shard. Throws std::invalid_argument unless batch x seq_len divides
  /// by the tensor-parallel size.
  int64_t localRows(int64_t batch) const;
  /// bf16 precision: rounds the weights for the coming forwards (after each optimizer step).
  void refreshRoundedWeights();

  void zeroGradients();

  /// Runs the GEMMs in bf16 (float models only; the CPU needs bf16 compute, see cpuHasBf16Compute()).
  /// Throws std::invalid_argument otherwise.
  void setPrecision(Precision precision);
  Precision precision() const { return precision_; }

  /// Logits [localRows(batch), vocab] of this rank's rows in the last forward() (slot 0).
  const T* logits() const { return slots_.at(0).logits.data(); }

 private:
  // One GEMM of a tensor-parallel region, y = x W + b with W [in, out] local. `act` is the tensor on the
  // region's side: the output [N, out] of a column-parallel GEMM, the input [N, in] of a row-parallel one.
  struct Projection {
    const T* w;
    const T* b;      // row-parallel: added by TP rank 0 only
    T* act;
    bf16* act_b;     // bf16: act rounded (row-parallel input)
    T* dw;
    T* db;
    T* dact;         // d(act)
    bf16* dact_b;    // bf16: d(act) rounded (column-parallel output gradient)
    int64_t width;   // out (column-parallel) or in (row-parallel)
  };
  // ln_full: [N, C] with this rank's rows written; gathers it (rounding to ln_b in bf16) and runs the
  // column-parallel projections on each run of rows as it arrives.
  void columnParallelForward(int64_t batch, T* ln_full, bf16* ln_b, std::initializer_list<Projection> projections);
  // shard = base + sum over TP ranks of the row-parallel projections' partial outputs.
  void rowParallelForward(int64_t batch, T* shard, const T* base, std::initializer_list<Projection> projections);
  // From d(block output shard) in scratch dresid: gathers it and writes each projection's d(input), then
  // its weight gradients.
  void rowParallelBackward(int64_t batch, std::initializer_list<Projection> projections);
  // dln shard = sum of the column-parallel projections' input gradients, reduce-scattered while their weight
  // gradients (inputs ln_full / ln_b) are computed.
  void columnParallelBackward(int64_t batch, const T* ln_full, const bf16* ln_b,
                              std::initializer_list<Projection> projections);
  void forwardLayer(Activations<T>& a, int64_t l);
  void backwardLayer(Activations<T>& a, int64_t l);
  void forwardHead(Activations<T>& a);
  void backwardHead(Activations<T>& a);
  void checkTokens(const int32_t* tokens, int64_t count, const char* what) const;
  Activations<T>& slot(int index);
  int tpSize() const { return slice_.tp_size; }
  // All-gathers the R-row shard at `full + rank*R*cols` (already in place) and runs consume on row runs.
  void gatherRows(T* full, int64_t rows, int64_t cols, const std::function<void(int64_t, int64_t)>& consume);
  // shard = base + sum over TP ranks of the rows produce(first, count, dst) accumulates (+=) into dst.
  RowSharding::PendingRows scatterRows(T* shard, const T* base, int64_t rows, int64_t cols,
                                                        const std::function<void(int64_t, int64_t, T*)>& produce);
  // y (=/+=) x W + b over s.rows rows in the model's precision (bf16: from x_b, x rounded earlier).
  void project(T* y, const T* x, const bf16* x_b, const T* w, const T* b, const LinearShape& s, bool accumulate);
  // dx (=/+=) dy W^T over s.rows rows (bf16: from dy_b, dy rounded earlier).
  void inputGrad(T* dx, const T* dy, const bf16* dy_b, const T* w, const LinearShape& s, bool accumulate);
  // dW += x^T dy, db += column sums of dy (bf16: from dy_b and x_b).
  void weightGrad(T* dw, T* db, const T* dy, const bf16* dy_b, const T* x, const bf16* x_b, const LinearShape& s);
  // bf16 only: dst = src rounded, `count` elements (no-op in fp32).
  void round(bf16* dst, const T* src, int64_t count);
  const bf16* roundedWeight(const T* w) const { return weights_b_.data() + (w - params_.data()); }
  bool halfPrecision() const { return precision_ == Precision::kBf16; }

  // A layer's ranges: ln1 + qkv, proj, (ln2 +) fc, fcproj; contiguous in the table in this order.
  struct LayerRanges {
    ParamRange qkv, proj, fc, fcproj;
  };
  LayerRanges layerRanges(int64_t local_layer) const;
  // The tensors of one layer whose names (after "layers.N.") run from `first` to `last` in the table.
  ParamRange tensorRange(int64_t local_layer, const std::string& first, const std::string& last) const;
  ParamRange frontRange() const;  // wte (and wpe) at the front of the table
  ParamRange headRange() const;   // lnf at the end (empty without the head)
  void beforeUse(ParamRange r) {
    if (before_use_ && r.end > r.begin) before_use_(r);
  }
  void gradientsDone(ParamRange r) {
    if (gradients_done_ && r.end > r.begin) gradients_done_(r);
  }

  ModelConfig config_;
  ModelSlice slice_;
  RowSharding* tp_;
  std::function<void(ParamRange)> before_use_, gradients_done_;
  std::vector<ParamSpec> table_;
  std::vector<T> params_, grads_;
  GlobalParams<T> p_{}, g_{};
  std::vector<LayerParams<T>> lp_, lg_;
  std::vector<LayerRanges> layer_ranges_;
  std::vector<Activations<T>> slots_;
  BackwardScratch<T> scratch_;
  std::vector<T> replicated_grads_;  // reduceTensorParallelGradients' packing buffer
  Precision precision_ = Precision::kFp32;
  std::vector<bf16> weights_b_;  // bf16 precision: every parameter rounded by refreshRoundedWeights()
};

}  // namespace megascale::trainer
