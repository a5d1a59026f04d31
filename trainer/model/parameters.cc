#include "trainer/model/parameters.h"

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <unordered_map>

namespace megascale::trainer {

int64_t ParamSpec::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

class TableBuilder {
 public:
  TableBuilder(const ModelSlice& slice) : slice_(slice) {}

  void replicated(const std::string& name, std::vector<int64_t> shape, bool decay) {
    add(name, shape, shape, ShardLayout{}, decay);
  }
  // Split dimension `dim` across the TP ranks, each of `blocks` blocks separately.
  void sharded(const std::string& name, std::vector<int64_t> global_shape, int dim, int blocks, bool decay) {
    std::vector<int64_t> local = global_shape;
    local[dim] /= slice_.tp_size;
    add(name, local, global_shape, ShardLayout{dim, slice_.tp_rank, slice_.tp_size, blocks}, decay);
  }
  std::vector<ParamSpec> take() { return std::move(table_); }

 private:
  void add(const std::string& name, std::vector<int64_t> local, std::vector<int64_t> global, ShardLayout layout,
           bool decay) {
    ParamSpec spec{name, std::move(local), std::move(global), layout, decay, next_offset_};
    next_offset_ += spec.size();
    table_.push_back(std::move(spec));
  }

  const ModelSlice& slice_;
  std::vector<ParamSpec> table_;
  int64_t next_offset_ = 0;
};

}  // namespace

std::vector<ParamSpec> buildParameterTable(const ModelConfig& c, const ModelSlice& slice) {
  c.validate();
  slice.validate(c);
  const int64_t d = c.d_model;
  TableBuilder t(slice);
  if (slice.hasEmbedding() || slice.hasHead(c)) t.replicated("wte", {c.vocab, d}, true);
  if (slice.hasEmbedding()) t.replicated("wpe", {c.seq_len, d}, true);
  for (int64_t l = slice.first_layer; l < slice.layerEnd(c); ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    t.replicated(p + "ln1.weight", {d}, false);
    t.replicated(p + "ln1.bias", {d}, false);
    t.sharded(p + "qkv.weight", {d, 3 * d}, 1, 3, true);
    t.sharded(p + "qkv.bias", {3 * d}, 0, 3, false);
    t.sharded(p + "proj.weight", {d, d}, 0, 1, true);
    t.replicated(p + "proj.bias", {d}, false);
    if (c.block == BlockKind::kSerial) {
      t.replicated(p + "ln2.weight", {d}, false);
      t.replicated(p + "ln2.bias", {d}, false);
    }
    t.sharded(p + "fc.weight", {d, 4 * d}, 1, 1, true);
    t.sharded(p + "fc.bias", {4 * d}, 0, 1, false);
    t.sharded(p + "fcproj.weight", {4 * d, d}, 0, 1, true);
    t.replicated(p + "fcproj.bias", {d}, false);
  }
  if (slice.hasHead(c)) {
    t.replicated("lnf.weight", {d}, false);
    t.replicated("lnf.bias", {d}, false);
  }
  return t.take();
}

int64_t parameterCount(const std::vector<ParamSpec>& table) {
  return table.empty() ? 0 : table.back().offset + table.back().size();
}

int64_t globalSize(const ParamSpec& spec) {
  int64_t n = 1;
  for (int64_t d : spec.global_shape) n *= d;
  return n;
}

namespace {

// Visits the runs of a shard: the tensor is [outer, dim, inner] around the sharded dimension, which holds
// `blocks` blocks; this rank holds part shard_index of each block. visit(global_offset, local_offset, length).
template <typename Visit>
void forEachShardRun(const ParamSpec& spec, Visit visit) {
  const ShardLayout& l = spec.layout;
  if (l.shard_dim < 0) return visit(int64_t{0}, int64_t{0}, spec.size());
  const auto dim = static_cast<size_t>(l.shard_dim);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < dim; ++i) outer *= spec.global_shape[i];
  for (size_t i = dim + 1; i < spec.global_shape.size(); ++i) inner *= spec.global_shape[i];
  const int64_t global_dim = spec.global_shape[dim], block = global_dim / l.blocks, part = block / l.shard_count;
  const int64_t local_dim = spec.shape[dim];
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t b = 0; b < l.blocks; ++b) {
      const int64_t global_index = o * global_dim + b * block + l.shard_index * part;
      const int64_t local_index = o * local_dim + b * part;
      visit(global_index * inner, local_index * inner, part * inner);
    }
  }
}

}  // namespace

template <typename T>
void copyShardFromGlobal(const ParamSpec& spec, const T* global, T* local) {
  forEachShardRun(spec, [&](int64_t g, int64_t l, int64_t n) { std::copy(global + g, global + g + n, local + l); });
}

template <typename T>
void copyShardToGlobal(const ParamSpec& spec, const T* local, T* global) {
  forEachShardRun(spec, [&](int64_t g, int64_t l, int64_t n) { std::copy(local + l, local + l + n, global + g); });
}

template void copyShardFromGlobal<float>(const ParamSpec&, const float*, float*);
template void copyShardFromGlobal<double>(const ParamSpec&, const double*, double*);
template void copyShardToGlobal<float>(const ParamSpec&, const float*, float*);
template void copyShardToGlobal<double>(const ParamSpec&, const double*, double*);

template <typename T>
void bindParameters(T* base, const std::vector<ParamSpec>& table, const ModelConfig& c, const ModelSlice& slice,
                    GlobalParams<T>& global, std::vector<LayerParams<T>>& layers) {
  std::unordered_map<std::string, T*> by_name;
  for (const auto& spec : table) by_name[spec.name] = base + spec.offset;
  auto find = [&](const std::string& name) -> T* {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  };
  global = GlobalParams<T>{find("wte"), find("wpe"), find("lnf.weight"), find("lnf.bias")};
  layers.clear();
  for (int64_t l = slice.first_layer; l < slice.layerEnd(c); ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    layers.push_back(LayerParams<T>{find(p + "ln1.weight"), find(p + "ln1.bias"), find(p + "qkv.weight"),
                                    find(p + "qkv.bias"), find(p + "proj.weight"), find(p + "proj.bias"),
                                    find(p + "ln2.weight"), find(p + "ln2.bias"), find(p + "fc.weight"),
                                    find(p + "fc.bias"), find(p + "fcproj.weight"), find(p + "fcproj.bias")});
  }
}

template void bindParameters<float>(float*, const std::vector<ParamSpec>&, const ModelConfig&, const ModelSlice&,
                                    GlobalParams<float>&, std::vector<LayerParams<float>>&);
template void bindParameters<double>(double*, const std::vector<ParamSpec>&, const ModelConfig&, const ModelSlice&,
                                     GlobalParams<double>&, std::vector<LayerParams<double>>&);

}  // namespace megascale::trainer
