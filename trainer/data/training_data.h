// The run's tokens: from a token shard, or a text file encoded with the chosen tokenizer.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trainer/data/token_store.h"
#include "trainer/data/tokenizer.h"

namespace megascale::trainer {

struct TrainingData {
  std::shared_ptr<const TokenStore> tokens;
  int32_t vocab = 0;
  Tokenizer tokenizer;  // decodes samples (bytes-only for shards)
  std::string description;
};

/// `tokenizer_spec`: "bytes", "bpe:N" (learned from this text; saved to save_dir/tokenizer.bpe when set),
/// or a .bpe file. Throws std::runtime_error / std::invalid_argument with the path and problem.
TrainingData loadTrainingData(const std::string& path, const std::string& tokenizer_spec, const std::string& save_dir);

}  // namespace megascale::trainer
