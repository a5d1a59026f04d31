#include "trainer/data/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace megascale::trainer {

namespace {

uint64_t pairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

enum class CharClass { kSpace, kLetter, kDigit, kOther };
CharClass classify(unsigned char c) {
  if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') return CharClass::kSpace;
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80) return CharClass::kLetter;
  if (c >= '0' && c <= '9') return CharClass::kDigit;
  return CharClass::kOther;
}

// Replaces each non-overlapping (left, right) in ids, scanning left to right.
void applyMerge(std::vector<int32_t>& ids, int32_t left, int32_t right, int32_t merged) {
  size_t out = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i + 1 < ids.size() && ids[i] == left && ids[i + 1] == right) {
      ids[out++] = merged;
      ++i;
    } else {
      ids[out++] = ids[i];
    }
  }
  ids.resize(out);
}

}  // namespace

std::vector<std::string_view> preTokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  const size_t n = text.size();
  auto cls = [&](size_t at) { return classify(static_cast<unsigned char>(text[at])); };
  size_t i = 0;
  while (i < n) {
    const size_t start = i;
    if (cls(i) == CharClass::kSpace) {
      size_t end = i;
      while (end < n && cls(end) == CharClass::kSpace) ++end;
      const bool space_before_token = end < n && text[end - 1] == ' ';
      if (!space_before_token) {  // trailing whitespace, or a run ending in a newline: a piece of its own
        pieces.push_back(text.substr(start, end - start));
        i = end;
        continue;
      }
      if (end - start > 1) {  // keep the last space for the next token (" the")
        pieces.push_back(text.substr(start, end - 1 - start));
        i = end - 1;
        continue;
      }
      ++i;  // a lone space: it leads the token that follows
    }
    const CharClass kind = cls(i);
    while (i < n && cls(i) == kind) ++i;
    pieces.push_back(text.substr(start, i - start));
  }
  return pieces;
}

void Tokenizer::addMerge(int32_t left, int32_t right) {
  rank_[pairKey(left, right)] = static_cast<int32_t>(merges_.size());
  merges_.emplace_back(left, right);
  if (bytes_of_.empty()) {
    for (int b = 0; b < 256; ++b) bytes_of_.push_back(std::string(1, static_cast<char>(b)));
  }
  bytes_of_.push_back(bytes_of_[static_cast<size_t>(left)] + bytes_of_[static_cast<size_t>(right)]);
}

Tokenizer Tokenizer::trainBpe(std::string_view text, int32_t vocab_size) {
  if (vocab_size < 256) throw std::invalid_argument("a BPE vocabulary has at least the 256 byte tokens");
  std::unordered_map<std::string_view, int64_t> counts;
  for (std::string_view piece : preTokenize(text)) ++counts[piece];
  // Sorted so that training is deterministic whatever the hash map's order.
  std::vector<std::pair<std::string_view, int64_t>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::vector<int32_t>> words;
  std::vector<int64_t> weights;
  for (const auto& [piece, count] : sorted) {
    words.emplace_back(piece.begin(), piece.end());
    for (auto& id : words.back()) id = static_cast<unsigned char>(id);
    weights.push_back(count);
  }
  Tokenizer t;
  std::unordered_map<uint64_t, int64_t> pairs;
  while (t.vocabSize() < vocab_size) {
    pairs.clear();
    for (size_t w = 0; w < words.size(); ++w) {
      for (size_t i = 0; i + 1 < words[w].size(); ++i) pairs[pairKey(words[w][i], words[w][i + 1])] += weights[w];
    }
    uint64_t best = 0;
    int64_t best_count = 1;
    for (const auto& [key, count] : pairs) {
      if (count > best_count || (count == best_count && count > 1 && key < best)) {
        best = key;
        best_count = count;
      }
    }
    if (best_count < 2) break;  // nothing repeats: further merges would memorize single words
    const auto left = static_cast<int32_t>(best >> 32), right = static_cast<int32_t>(best & 0xffffffffu);
    const int32_t merged = t.vocabSize();
    t.addMerge(left, right);
    for (auto& word : words) applyMerge(word, left, right, merged);
  }
  return t;
}

std::vector<int32_t> Tokenizer::encodePiece(std::string_view piece) const {
  std::vector<int32_t> ids(piece.begin(), piece.end());
  for (auto& id : ids) id = static_cast<unsigned char>(id);
  while (ids.size() > 1) {
    int32_t best_rank = -1;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      auto it = rank_.find(pairKey(ids[i], ids[i + 1]));
      if (it != rank_.end() && (best_rank < 0 || it->second < best_rank)) best_rank = it->second;
    }
    if (best_rank < 0) break;
    const auto& [left, right] = merges_[static_cast<size_t>(best_rank)];
    applyMerge(ids, left, right, 256 + best_rank);
  }
  return ids;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 2);
  std::unordered_map<std::string_view, std::vector<int32_t>> cache;
  for (std::string_view piece : preTokenize(text)) {
    auto it = cache.find(piece);
    if (it == cache.end()) it = cache.emplace(piece, encodePiece(piece)).first;
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int32_t>& tokens) const {
  std::string out;
  for (int32_t id : tokens) {
    if (id < 0 || id >= vocabSize()) {
      throw std::out_of_range("token " + std::to_string(id) + " is outside the vocabulary of " +
                              std::to_string(vocabSize()));
    }
    if (id < 256) {
      out.push_back(static_cast<char>(id));
    } else {
      out += bytes_of_[static_cast<size_t>(id)];
    }
  }
  return out;
}

std::string Tokenizer::serialize() const {
  std::ostringstream out;
  out << "megascale-bpe 1\n";
  for (const auto& [left, right] : merges_) out << left << ' ' << right << '\n';
  return out.str();
}

void Tokenizer::save(const std::string& path) const {
  std::ofstream out(path);
  out << serialize();
  out.flush();
  if (!out) throw std::runtime_error("cannot write the tokenizer to " + path);
}

Tokenizer Tokenizer::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open tokenizer file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

Tokenizer Tokenizer::parse(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != "megascale-bpe 1") {
    throw std::runtime_error(origin + ": not a megascale BPE file (first line must be 'megascale-bpe 1')");
  }
  Tokenizer t;
  for (int line_no = 2; std::getline(in, line); ++line_no) {
    std::istringstream fields(line);
    int64_t left = -1, right = -1;
    std::string extra;
    if (!(fields >> left >> right) || (fields >> extra) || left < 0 || right < 0 || left >= t.vocabSize() ||
        right >= t.vocabSize()) {
      throw std::runtime_error(origin + ":" + std::to_string(line_no) + ": expected two token ids below " +
                               std::to_string(t.vocabSize()) + ", got '" + line + "'");
    }
    t.addMerge(static_cast<int32_t>(left), static_cast<int32_t>(right));
  }
  return t;
}

}  // namespace megascale::trainer
