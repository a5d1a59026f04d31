#include "trainer/model/model_config.h"

#include <stdexcept>

namespace megascale::trainer {

BlockKind parseBlockKind(const std::string& text) {
  if (text == "parallel") return BlockKind::kParallel;
  if (text == "serial") return BlockKind::kSerial;
  throw std::invalid_argument("--block must be 'parallel' or 'serial', not '" + text + "'");
}

const char* blockKindName(BlockKind kind) { return kind == BlockKind::kParallel ? "parallel" : "serial"; }

void ModelConfig::validate() const {
  auto require = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(what);
  };
  require(layers >= 1, "--layers must be at least 1 (got " + std::to_string(layers) + ")");
  require(d_model >= 1, "--d-model must be at least 1 (got " + std::to_string(d_model) + ")");
  require(heads >= 1 && d_model % heads == 0, "--heads (" + std::to_string(heads) + ") must divide --d-model (" +
                                                  std::to_string(d_model) + ")");
  require(seq_len >= 1, "--seq-len must be at least 1 (got " + std::to_string(seq_len) + ")");
  require(vocab >= 2 && vocab <= (int64_t{1} << 31) - 1, "--vocab must be in [2, 2^31) (got " +
                                                              std::to_string(vocab) + ")");
  require(window >= 0, "--window must be >= 0 (0 = full causal; got " + std::to_string(window) + ")");
}

void ModelSlice::validate(const ModelConfig& c) const {
  if (tp_size < 1 || tp_rank < 0 || tp_rank >= tp_size) {
    throw std::invalid_argument("tensor-parallel rank " + std::to_string(tp_rank) + " of " + std::to_string(tp_size));
  }
  if (c.heads % tp_size != 0) {
    throw std::invalid_argument("tensor parallelism " + std::to_string(tp_size) + " must divide --heads (" +
                                std::to_string(c.heads) + ")");
  }
  if (first_layer < 0 || layerEnd(c) > c.layers || layerEnd(c) <= first_layer) {
    throw std::invalid_argument("pipeline stage layers [" + std::to_string(first_layer) + ", " +
                                std::to_string(layerEnd(c)) + ") is not a non-empty range of the model's " +
                                std::to_string(c.layers) + " layers");
  }
}

double flopsPerToken(const ModelConfig& c) {
  const double d = static_cast<double>(c.d_model);
  const double per_layer_weights = 12.0 * d * d;  // qkv 3d^2, proj d^2, mlp 8d^2
  const double head = static_cast<double>(c.vocab) * d;
  // Keys a query sees on average: all earlier ones up to the window.
  const double w = static_cast<double>(c.effectiveWindow()), s = static_cast<double>(c.seq_len);
  const double mean_keys = (w >= s) ? (s + 1) / 2 : w - (w * (w - 1) / 2) / s;
  const double attention = 2.0 * 2.0 * mean_keys * d;  // QK^T and PV, forward
  return 6.0 * (static_cast<double>(c.layers) * per_layer_weights + head) +
         3.0 * static_cast<double>(c.layers) * attention;
}

}  // namespace megascale::trainer
