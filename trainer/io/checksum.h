// CRC-32C (Castagnoli), the checksum of token shards and checkpoints: detects truncation and bit rot.
#pragma once

#include <cstddef>
#include <cstdint>

namespace megascale::trainer {

/// Continues a CRC-32C over `size` bytes; start with crc = 0.
uint32_t crc32c(uint32_t crc, const void* data, size_t size);

}  // namespace megascale::trainer
