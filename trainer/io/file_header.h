// The 64-byte header that starts our binary files (token shards, checkpoints): an 8-byte magic, a u32 version
// at offset 8, format fields in bytes 12-59, and the CRC-32C of bytes 0-59 at 60. Little-endian fields.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "trainer/io/checksum.h"

namespace megascale::trainer::file_header {

inline constexpr size_t kBytes = 64;

template <typename U>
void put(std::string& buffer, size_t at, U value) {
  std::memcpy(buffer.data() + at, &value, sizeof(U));
}

template <typename U>
U get(const std::string& buffer, size_t at) {
  U value;
  std::memcpy(&value, buffer.data() + at, sizeof(U));
  return value;
}

/// A zeroed header with magic and version; fill the format fields with put(), then seal().
inline std::string start(const char (&magic)[8], uint32_t version) {
  std::string header(kBytes, '\0');
  std::memcpy(header.data(), magic, sizeof(magic));
  put(header, 8, version);
  return header;
}

inline void seal(std::string& header) { put(header, 60, crc32c(0, header.data(), 60)); }

/// "" when `file` starts with a sound header of this magic and version, else what is wrong with it.
inline std::string problem(const std::string& file, const char (&magic)[8], uint32_t version, const char* kind) {
  if (file.size() < kBytes) return "truncated: shorter than its 64-byte header (" + std::to_string(file.size()) + " bytes)";
  if (std::memcmp(file.data(), magic, sizeof(magic)) != 0) return std::string("not a ") + kind + " (wrong magic)";
  if (get<uint32_t>(file, 60) != crc32c(0, file.data(), 60)) return "header checksum mismatch (corrupted)";
  const auto found = get<uint32_t>(file, 8);
  if (found != version) return "version " + std::to_string(found) + " (this build reads " + std::to_string(version) + ")";
  return "";
}

}  // namespace megascale::trainer::file_header
