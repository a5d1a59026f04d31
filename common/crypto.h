// The cryptography of challenge-response authentication (store and peer connections): the job secret never
// crosses the wire, only HMAC-SHA-256(secret, fresh nonces). Hashing, HMAC and random bytes are OpenSSL's
// libcrypto; this header keeps the rest of the project free of its types.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace megascale {

using Digest = std::array<uint8_t, 32>;

/// SHA-256 (FIPS 180-4) of a buffer.
Digest sha256(const void* data, size_t size);
/// HMAC-SHA-256 (RFC 2104) of a buffer under a key of any length.
Digest hmacSha256(std::string_view key, const void* data, size_t size);

/// Constant-time comparison, so a forged proof learns nothing from timing.
bool digestEquals(const Digest& a, const Digest& b);

/// Cryptographically random bytes (libcrypto's CSPRNG, seeded by the kernel). Throws Error(kSystem) on failure.
void randomBytes(void* out, size_t size);

std::string toHex(const void* data, size_t size);
/// Returns false if text is not even-length hex.
bool fromHex(std::string_view text, std::string* out);

/// A job secret given as hex (MEGASCALE_JOB_SECRET, a unique id): at least 16 bytes. Throws
/// Error(kInvalidArgument) naming `source` otherwise.
std::string jobSecretFromHex(std::string_view hex, std::string_view source);

}  // namespace megascale
