#include "common/status.h"

#include <cstring>

namespace megascale {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kTimeout: return "timeout";
    case ErrorCode::kPeerLost: return "peer lost";
    case ErrorCode::kSystem: return "system error";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kAborted: return "aborted";
    case ErrorCode::kAuthFailed: return "authentication failed";
    case ErrorCode::kMismatch: return "mismatch between ranks";
    case ErrorCode::kUnavailable: return "unavailable";
  }
  return "unknown error";
}

std::string errnoText(int err) {
  char buf[256];
  // GNU strerror_r returns a pointer that may or may not be buf.
  const char* text = strerror_r(err, buf, sizeof(buf));
  return std::string(text) + " (errno " + std::to_string(err) + ")";
}

}  // namespace megascale
