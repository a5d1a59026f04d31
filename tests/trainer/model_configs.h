// Small model shapes for tests.
#pragma once

#include "trainer/model/model_config.h"

namespace megascale::trainer::testing {

inline ModelConfig modelConfig(int64_t layers, int64_t d_model, int64_t heads, int64_t seq_len, int64_t vocab,
                               BlockKind block = BlockKind::kParallel, int64_t window = 0) {
  ModelConfig c;
  c.layers = layers;
  c.d_model = d_model;
  c.heads = heads;
  c.seq_len = seq_len;
  c.vocab = vocab;
  c.block = block;
  c.window = window;
  return c;
}

}  // namespace megascale::trainer::testing
