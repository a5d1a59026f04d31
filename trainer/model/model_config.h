// The shape of the GPT and of this process's slice of it. Parallelism arrives in a later issue; the slice
// (tensor-parallel rank, pipeline stage = a range of layers) is already explicit so the layers are built
// for it: with tp_size = 1 and one stage it is the whole model.
#pragma once

#include <cstdint>
#include <string>

namespace megascale::trainer {

enum class BlockKind {
  kParallel,  // y = x + Attn(LN(x)) + MLP(LN(x)): one LayerNorm, both branches from the same input
  kSerial,    // h = x + Attn(LN1(x)); y = h + MLP(LN2(h))
};

BlockKind parseBlockKind(const std::string& text);  // "parallel" | "serial"; throws std::invalid_argument
const char* blockKindName(BlockKind kind);

/// kBf16: GEMM operands (weights and activations) in bfloat16 with fp32 accumulation; master weights,
/// gradients, optimizer state and every other op stay fp32.
enum class Precision { kFp32, kBf16 };

struct ModelConfig {
  int64_t layers = 6;
  int64_t d_model = 384;
  int64_t heads = 6;
  int64_t seq_len = 256;
  int64_t vocab = 256;
  int64_t window = 0;  // sliding-window width; 0 or >= seq_len means full causal attention
  BlockKind block = BlockKind::kParallel;

  int64_t headDim() const { return d_model / heads; }
  int64_t effectiveWindow() const { return window <= 0 || window > seq_len ? seq_len : window; }
  /// Throws std::invalid_argument naming the offending field.
  void validate() const;
};

/// This process's part of the model.
struct ModelSlice {
  int tp_size = 1, tp_rank = 0;  // column-parallel layers hold out/tp_size columns, row-parallel in/tp_size rows
  int64_t first_layer = 0;       // pipeline stage: layers [first_layer, first_layer + layer_count)
  int64_t layer_count = -1;      // -1: to the last layer

  int64_t layerEnd(const ModelConfig& c) const { return layer_count < 0 ? c.layers : first_layer + layer_count; }
  bool hasEmbedding() const { return first_layer == 0; }
  bool hasHead(const ModelConfig& c) const { return layerEnd(c) == c.layers; }
  void validate(const ModelConfig& c) const;
};

/// Model FLOPs per token for MFU, in the convention of Megatron-LM and llm.c: 6 x (non-embedding weights +
/// tied head) plus the attention matmuls, counted for the positions the sliding window lets each query see.
double flopsPerToken(const ModelConfig& c);

}  // namespace megascale::trainer
