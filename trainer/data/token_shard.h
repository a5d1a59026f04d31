// The token shard file: a 64-byte little-endian header, then the tokens as uint16 (vocabulary <= 65536)
// or uint32. Header: "MSTOKENS", version 1, bytes per token, vocabulary size, CRC-32C of the payload,
// token count, zero padding, and a CRC-32C of the header's first 60 bytes at offset 60.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace megascale::trainer {

struct TokenShard {
  int32_t vocab = 0;
  std::vector<int32_t> tokens;
};

/// Writes atomically (temporary file, fsync, rename). Throws std::invalid_argument for a token outside
/// [0, vocab) and std::runtime_error for I/O failures.
void writeTokenShard(const std::string& path, const std::vector<int32_t>& tokens, int32_t vocab);

/// Reads and validates magic, version, header checksum, size, payload checksum and every token's range.
/// Throws std::runtime_error naming the file and what is wrong.
TokenShard readTokenShard(const std::string& path);

}  // namespace megascale::trainer
