#include "trainer/model/parameters.h"

#include <gtest/gtest.h>

#include "trainer/model_configs.h"

namespace megascale::trainer {
namespace {

ModelConfig small(BlockKind block) { return testing::modelConfig(2, 8, 2, 5, 11, block); }

TEST(ParameterTable, WholeModelCountsEveryTensorOnce) {
  auto table = buildParameterTable(small(BlockKind::kSerial), {});
  const int64_t d = 8, layer = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (4 * d * d + 4 * d) + (4 * d * d + d);
  EXPECT_EQ(parameterCount(table), 11 * d + 5 * d + 2 * layer + 2 * d);
  int64_t expected_offset = 0;
  for (const auto& spec : table) {
    EXPECT_EQ(spec.offset, expected_offset) << spec.name;
    expected_offset += spec.size();
  }
  auto parallel = buildParameterTable(small(BlockKind::kParallel), {});
  EXPECT_EQ(parameterCount(parallel), parameterCount(table) - 2 * 2 * d);  // no ln2 in the parallel block
}

TEST(ParameterTable, TensorParallelShardsAreExplicit) {
  ModelSlice slice;
  slice.tp_size = 2;
  slice.tp_rank = 1;
  auto table = buildParameterTable(small(BlockKind::kParallel), slice);
  auto find = [&](const std::string& name) {
    for (const auto& s : table) {
      if (s.name == name) return s;
    }
    ADD_FAILURE() << name;
    return ParamSpec{};
  };
  auto qkv = find("layers.0.qkv.weight");
  EXPECT_EQ(qkv.shape, (std::vector<int64_t>{8, 12}));
  EXPECT_EQ(qkv.global_shape, (std::vector<int64_t>{8, 24}));
  EXPECT_EQ(qkv.layout.shard_dim, 1);
  EXPECT_EQ(qkv.layout.blocks, 3);
  EXPECT_EQ(qkv.layout.shard_index, 1);
  auto proj = find("layers.1.proj.weight");  // row-parallel: input rows split
  EXPECT_EQ(proj.shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(proj.layout.shard_dim, 0);
  EXPECT_EQ(find("layers.1.proj.bias").layout.shard_dim, -1);  // added once after the reduction
  EXPECT_EQ(find("layers.0.fc.weight").shape, (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(find("layers.0.fcproj.weight").shape, (std::vector<int64_t>{16, 8}));
}

TEST(ParameterTable, PipelineStageHoldsItsLayersOnly) {
  ModelConfig c = small(BlockKind::kSerial);
  c.layers = 4;
  ModelSlice middle;
  middle.first_layer = 1;
  middle.layer_count = 2;
  auto table = buildParameterTable(c, middle);
  for (const auto& s : table) {
    EXPECT_TRUE(s.name.rfind("layers.1.", 0) == 0 || s.name.rfind("layers.2.", 0) == 0) << s.name;
  }
  ModelSlice last;
  last.first_layer = 3;
  auto tail = buildParameterTable(c, last);
  EXPECT_EQ(tail.front().name, "wte");  // tied head
  EXPECT_EQ(tail.back().name, "lnf.bias");
}

TEST(ParameterTable, BadShapesAreRefusedWithTheField) {
  ModelConfig c = small(BlockKind::kSerial);
  c.heads = 3;
  EXPECT_THROW(buildParameterTable(c, {}), std::invalid_argument);
  ModelSlice slice;
  slice.tp_size = 4;  // 2 heads cannot split 4 ways
  EXPECT_THROW(buildParameterTable(small(BlockKind::kSerial), slice), std::invalid_argument);
  ModelSlice beyond;
  beyond.first_layer = 2;
  EXPECT_THROW(buildParameterTable(small(BlockKind::kSerial), beyond), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::trainer
