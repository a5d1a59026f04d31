// Byte-level BPE: token ids 0..255 are the bytes themselves (so any input encodes, the fallback of every
// unknown sequence), ids 256.. are merges learned by trainBpe() from a corpus. Merges never cross a
// pre-token boundary (a word with its leading space, a run of digits, of punctuation or of whitespace).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace megascale::trainer {

class Tokenizer {
 public:
  /// Bytes only: vocabulary 256.
  Tokenizer() = default;

  /// Learns merges on `text` until the vocabulary has `vocab_size` tokens (or no pair occurs twice).
  static Tokenizer trainBpe(std::string_view text, int32_t vocab_size);

  /// The text format: "megascale-bpe 1" then one merge per line, "left right" as token ids.
  /// load() throws std::runtime_error naming the file and line of any malformed or out-of-order merge.
  static Tokenizer load(const std::string& path);
  void save(const std::string& path) const;
  /// The same format in memory; `origin` names the source in errors.
  std::string serialize() const;
  static Tokenizer parse(const std::string& text, const std::string& origin);

  int32_t vocabSize() const { return 256 + static_cast<int32_t>(merges_.size()); }
  std::vector<int32_t> encode(std::string_view text) const;
  std::string decode(const std::vector<int32_t>& tokens) const;

 private:
  void addMerge(int32_t left, int32_t right);
  std::vector<int32_t> encodePiece(std::string_view piece) const;

  std::vector<std::pair<int32_t, int32_t>> merges_;                 // merge i makes token 256 + i
  std::unordered_map<uint64_t, int32_t> rank_;                      // (left, right) -> merge index
  std::vector<std::string> bytes_of_;                               // token id -> the bytes it stands for
};

/// Splits text into pre-tokens (the units BPE merges within).
std::vector<std::string_view> preTokenize(std::string_view text);

}  // namespace megascale::trainer
