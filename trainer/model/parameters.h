// The parameter table: every tensor of this model slice, where it lives in the one flat buffer (so
// gradients are one buffer for all-reduce / reduce-scatter), and how it is cut from the global tensor.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/model/model_config.h"

namespace megascale::trainer {

/// How a local tensor relates to the global one. shard_dim < 0: replicated (every TP rank holds all of it).
/// Otherwise dimension shard_dim of the global tensor is `blocks` equal blocks (3 for fused q|k|v), and this
/// rank holds the shard_index-th of shard_count equal parts of each block, concatenated.
struct ShardLayout {
  int shard_dim = -1;
  int shard_index = 0, shard_count = 1;
  int blocks = 1;
};

struct ParamSpec {
  std::string name;                 // "layers.3.qkv.weight"
  std::vector<int64_t> shape;       // local
  std::vector<int64_t> global_shape;
  ShardLayout layout;
  bool weight_decay = false;        // matrices and embeddings decay; biases and LayerNorm do not
  int64_t offset = 0;               // into the flat buffer, in elements
  int64_t size() const;
};

/// The tensors of one transformer layer (pointers into a flat buffer), in table order.
template <typename T>
struct LayerParams {
  T *ln1_w, *ln1_b;        // [C]
  T *qkv_w, *qkv_b;        // [C, 3C/tp] column-parallel (q|k|v blocks), [3C/tp]
  T *proj_w, *proj_b;      // [C/tp, C] row-parallel, [C]
  T *ln2_w, *ln2_b;        // [C], serial block only (null for the parallel block)
  T *fc_w, *fc_b;          // [C, 4C/tp] column-parallel, [4C/tp]
  T *fcproj_w, *fcproj_b;  // [4C/tp, C] row-parallel, [C]
};

/// wte [V, C] (tied with the head), wpe [T, C], lnf [C]; null when this stage does not hold them.
template <typename T>
struct GlobalParams {
  T *wte, *wpe, *lnf_w, *lnf_b;
};

/// Builds the table for a slice: embeddings on the first stage, lnf on the last, its layers between.
std::vector<ParamSpec> buildParameterTable(const ModelConfig& c, const ModelSlice& slice);

/// Total elements of a table.
int64_t parameterCount(const std::vector<ParamSpec>& table);

/// Copies this rank's shard of a tensor out of the whole (global) tensor, and back: how tensor-parallel
/// slices are initialized and how checkpoints move between layouts.
template <typename T>
void copyShardFromGlobal(const ParamSpec& spec, const T* global, T* local);
template <typename T>
void copyShardToGlobal(const ParamSpec& spec, const T* local, T* global);

/// Elements of the whole tensor.
int64_t globalSize(const ParamSpec& spec);

/// Points the structs into `base` following `table` (the table built for the same config and slice).
template <typename T>
void bindParameters(T* base, const std::vector<ParamSpec>& table, const ModelConfig& c, const ModelSlice& slice,
                    GlobalParams<T>& global, std::vector<LayerParams<T>>& layers);

}  // namespace megascale::trainer
