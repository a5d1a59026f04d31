// CRC-32C (Castagnoli), the checksum of token shards and checkpoints: detects truncation and bit rot.
#pragma once

#include <cstddef>
#include <cstdint>

namespace megascale::trainer {

/// Continues a CRC-32C over `size` bytes; start with crc = 0. Uses the CPU's crc32 instruction where it has one
/// (SSE4.2: several GB/s, so a checkpoint into host memory every step stays cheap), else tables.
uint32_t crc32c(uint32_t crc, const void* data, size_t size);
/// The same with tables only (slicing-by-8), on every CPU.
uint32_t crc32cPortable(uint32_t crc, const void* data, size_t size);

}  // namespace megascale::trainer
