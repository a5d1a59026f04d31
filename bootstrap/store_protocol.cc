#include "bootstrap/store_protocol.h"

#include <cstring>

namespace megascale::store_protocol {

namespace {
template <typename T>
void appendLittleEndian(std::string* out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i) out->push_back(static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff));
}

template <typename T>
T readLittleEndian(const char* p) {
  uint64_t v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return static_cast<T>(v);
}
}  // namespace

Writer& Writer::str(std::string_view s) {
  appendLittleEndian<uint32_t>(&bytes_, static_cast<uint32_t>(s.size()));
  bytes_.append(s);
  return *this;
}

Writer& Writer::u32(uint32_t v) {
  appendLittleEndian(&bytes_, v);
  return *this;
}

Writer& Writer::i64(int64_t v) {
  appendLittleEndian(&bytes_, v);
  return *this;
}

std::string Writer::finish() {
  uint32_t body = static_cast<uint32_t>(bytes_.size() - 4);
  for (int i = 0; i < 4; ++i) bytes_[i] = static_cast<char>((body >> (8 * i)) & 0xff);
  return std::move(bytes_);
}

std::optional<std::string> Reader::str() {
  std::optional<uint32_t> len = u32();
  if (!len || *len > body_.size() - pos_) return std::nullopt;
  std::string s(body_.substr(pos_, *len));
  pos_ += *len;
  return s;
}

std::optional<uint32_t> Reader::u32() {
  if (body_.size() - pos_ < 4) return std::nullopt;
  uint32_t v = readLittleEndian<uint32_t>(body_.data() + pos_);
  pos_ += 4;
  return v;
}

std::optional<int64_t> Reader::i64() {
  if (body_.size() - pos_ < 8) return std::nullopt;
  int64_t v = readLittleEndian<int64_t>(body_.data() + pos_);
  pos_ += 8;
  return v;
}

std::optional<uint32_t> completeFrame(std::string_view buffer, bool* too_large) {
  *too_large = false;
  if (buffer.size() < 4) return std::nullopt;
  uint32_t body = readLittleEndian<uint32_t>(buffer.data());
  if (body > kMaxFrameBytes) {
    *too_large = true;
    return std::nullopt;
  }
  if (buffer.size() - 4 < body) return std::nullopt;
  return body;
}

}  // namespace megascale::store_protocol
