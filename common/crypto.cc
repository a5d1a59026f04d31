#include "common/crypto.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <climits>

#include "common/status.h"

namespace megascale {

namespace {

[[noreturn]] void throwOpenSsl(const char* operation) {
  char reason[256] = "no detail";
  unsigned long code = ERR_get_error();
  if (code != 0) ERR_error_string_n(code, reason, sizeof(reason));
  ERR_clear_error();
  throw Error(ErrorCode::kSystem, std::string("libcrypto ") + operation + " failed: " + reason);
}

}  // namespace

Digest sha256(const void* data, size_t size) {
  Digest out;
  unsigned int length = 0;
  if (EVP_Digest(data, size, out.data(), &length, EVP_sha256(), nullptr) != 1 || length != out.size()) {
    throwOpenSsl("SHA-256");
  }
  return out;
}

Digest hmacSha256(std::string_view key, const void* data, size_t size) {
  if (key.size() > static_cast<size_t>(INT_MAX)) throw Error(ErrorCode::kInvalidArgument, "HMAC key too long");
  Digest out;
  unsigned int length = 0;
  // An empty key still needs a non-null pointer: libcrypto reads a null key as "reuse the previous key".
  static const unsigned char kNoKey = 0;
  const void* key_bytes = key.empty() ? static_cast<const void*>(&kNoKey) : key.data();
  if (HMAC(EVP_sha256(), key_bytes, static_cast<int>(key.size()), static_cast<const unsigned char*>(data), size,
           out.data(), &length) == nullptr ||
      length != out.size()) {
    throwOpenSsl("HMAC-SHA-256");
  }
  return out;
}

bool digestEquals(const Digest& a, const Digest& b) { return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0; }

void randomBytes(void* out, size_t size) {
  auto* p = static_cast<unsigned char*>(out);
  while (size > 0) {  // RAND_bytes takes an int count
    const int chunk = static_cast<int>(std::min<size_t>(size, 1 << 20));
    if (RAND_bytes(p, chunk) != 1) throwOpenSsl("RAND_bytes");
    p += chunk;
    size -= static_cast<size_t>(chunk);
  }
}

std::string toHex(const void* data, size_t size) {
  static const char digits[] = "0123456789abcdef";
  const uint8_t* p = static_cast<const uint8_t*>(data);
  std::string out(size * 2, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = digits[p[i] >> 4];
    out[2 * i + 1] = digits[p[i] & 15];
  }
  return out;
}

bool fromHex(std::string_view text, std::string* out) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (text.size() % 2 != 0) return false;
  out->clear();
  for (size_t i = 0; i < text.size(); i += 2) {
    int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return false;
    out->push_back(static_cast<char>(hi * 16 + lo));
  }
  return true;
}

std::string jobSecretFromHex(std::string_view hex, std::string_view source) {
  std::string secret;
  if (!fromHex(hex, &secret) || secret.size() < 16) {
    throw Error(ErrorCode::kInvalidArgument, std::string(source) + ": the job secret must be at least 16 bytes of hex (" +
                                                 std::to_string(hex.size()) + " characters given)");
  }
  return secret;
}

}  // namespace megascale
