#include "trainer/data/training_data.h"

#include <chrono>
#include <filesystem>
#include <stdexcept>

#include <zlib.h>

#include "trainer/data/token_shard.h"

namespace megascale::trainer {

namespace {

// Plain or gzip-compressed text (gzread passes uncompressed files through unchanged).
std::string readText(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error("cannot open training text " + path);
  std::string text;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  int error = Z_OK;
  const char* message = gzerror(file, &error);
  gzclose(file);
  if (n < 0 || (error != Z_OK && error != Z_STREAM_END)) {
    throw std::runtime_error("cannot read training text " + path + ": " + message);
  }
  return text;
}

}  // namespace

TrainingData loadTrainingData(const std::string& path, const std::string& tokenizer_spec,
                              const std::string& save_dir) {
  if (path.empty()) throw std::invalid_argument("--data is required (a text file or a token shard)");
  TrainingData data;
  if (path.ends_with(".bin")) {
    TokenShard shard = readTokenShard(path);
    data.vocab = shard.vocab;
    data.description = path + ": " + std::to_string(shard.tokens.size()) + " tokens, vocabulary " +
                       std::to_string(shard.vocab) + " (token shard)";
    data.tokens = std::make_shared<const TokenStore>(std::move(shard.tokens));
    return data;
  }
  const std::string text = readText(path);
  const auto t0 = std::chrono::steady_clock::now();
  std::string how = "bytes";
  if (tokenizer_spec.rfind("bpe:", 0) == 0) {
    const int32_t size = static_cast<int32_t>(std::stol(tokenizer_spec.substr(4)));
    data.tokenizer = Tokenizer::trainBpe(text, size);
    how = "byte-level BPE learned here, " + std::to_string(data.tokenizer.vocabSize()) + " tokens";
    if (!save_dir.empty()) {
      std::filesystem::create_directories(save_dir);
      data.tokenizer.save(save_dir + "/tokenizer.bpe");
    }
  } else if (tokenizer_spec != "bytes") {
    data.tokenizer = Tokenizer::load(tokenizer_spec);
    how = "BPE from " + tokenizer_spec;
  }
  data.tokens = std::make_shared<const TokenStore>(data.tokenizer.encode(text));
  data.vocab = data.tokenizer.vocabSize();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  char timing[64];
  std::snprintf(timing, sizeof(timing), "%.1f", seconds);
  data.description = path + ": " + std::to_string(text.size()) + " bytes -> " + std::to_string(data.tokens->size()) +
                     " tokens (" + how + ", " + timing + " s)";
  return data;
}

}  // namespace megascale::trainer
