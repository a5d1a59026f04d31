// Sizes on the command line as nccl-tests writes them: a number with an optional K, M or G (1024-based).
#pragma once

#include <cstddef>
#include <cstdlib>

namespace megascale::bench {

/// False for text that is not a non-negative number with an optional K/M/G suffix.
inline bool parseByteSize(const char* text, size_t* bytes) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || v < 0) return false;
  switch (*end) {
    case 'G': case 'g': v *= 1024; [[fallthrough]];
    case 'M': case 'm': v *= 1024; [[fallthrough]];
    case 'K': case 'k': v *= 1024; ++end; break;
    default: break;
  }
  if (*end != '\0') return false;
  *bytes = static_cast<size_t>(v);
  return true;
}

}  // namespace megascale::bench
