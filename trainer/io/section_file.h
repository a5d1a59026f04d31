// Files of named sections behind a checksummed header: the format of every checkpoint file. A 64-byte header
// (magic, version, payload bytes at 16, payload CRC-32C at 24, header CRC at 60), then sections: u32 name
// length, name, u64 byte length, bytes. Writes are atomic (temporary file, fsync, rename); reads refuse a
// truncated, padded or corrupted file with a message naming the path and the problem.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace megascale::trainer {

class SectionWriter {
 public:
  void add(const std::string& name, const void* data, uint64_t bytes);
  /// Like add, without copying the bytes: one section made of `pieces` in order, which must stay valid and
  /// unchanged until write() returns.
  void addViews(const std::string& name, const std::vector<std::string_view>& pieces);
  template <typename T>
  void addVector(const std::string& name, const std::vector<T>& v) {
    add(name, v.data(), v.size() * sizeof(T));
  }
  template <typename T>
  void addValue(const std::string& name, const T& value) {
    add(name, &value, sizeof(T));
  }
  /// Throws std::runtime_error on I/O failure.
  void write(const std::string& path, const char (&magic)[8], uint32_t version) const;

 private:
  /// The section's name and length, as they precede its bytes.
  std::string& frame(const std::string& name, uint64_t bytes);
  /// The header, then the payload's parts.
  std::vector<std::string_view> file(std::string& header, const char (&magic)[8], uint32_t version) const;
  std::deque<std::string> owned_;        // frames and copied bytes (a deque: they never move)
  std::vector<std::string_view> parts_;  // the payload in order
};

class SectionFile {
 public:
  /// Reads and checks the whole file. `what` names the kind of file in errors ("megascale checkpoint").
  SectionFile(const std::string& path, const char (&magic)[8], uint32_t version, const char* what);

  bool has(const std::string& name) const { return sections_.count(name) != 0; }
  /// The section's bytes; throws when it is missing or (expected_bytes given) of another size.
  std::string_view section(const std::string& name) const;
  std::string_view section(const std::string& name, size_t expected_bytes) const;
  template <typename T>
  T value(const std::string& name) const {
    T out;
    std::memcpy(&out, section(name, sizeof(T)).data(), sizeof(T));
    return out;
  }
  std::vector<std::string> names() const;
  const std::string& path() const { return path_; }
  std::runtime_error error(const std::string& problem) const;

 private:
  std::string path_;
  std::string bytes_;
  std::map<std::string, std::string_view> sections_;
};

}  // namespace megascale::trainer
