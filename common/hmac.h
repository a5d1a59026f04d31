// SHA-256 (FIPS 180-4) and HMAC-SHA-256 (RFC 2104), for challenge-response authentication of store and peer
// connections: the job secret never crosses the wire, only HMAC(secret, fresh nonce).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace megascale {

using Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  Digest finish();

 private:
  void compress(const uint8_t block[64]);
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

Digest sha256(const void* data, size_t size);
Digest hmacSha256(std::string_view key, const void* data, size_t size);

/// Constant-time comparison, so a forged proof learns nothing from timing.
bool digestEquals(const Digest& a, const Digest& b);

/// Cryptographically random bytes from the kernel (getrandom). Throws Error on failure.
void randomBytes(void* out, size_t size);

std::string toHex(const void* data, size_t size);
/// Returns false if text is not even-length hex.
bool fromHex(std::string_view text, std::string* out);

}  // namespace megascale
