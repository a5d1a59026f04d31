// Errors with scope. Setup code throws megascale::Error; the data path returns Status (no exceptions in poll
// loops); every C boundary maps both to a code. Each message names the operation, the rank and the peer.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace megascale {

/// The blast radius of a failure, so a caller can decide what to do without parsing text.
enum class ErrorCode : int {
  kOk = 0,
  kInvalidArgument = 1,  // the caller's mistake; nothing is broken
  kTimeout = 2,          // a wait ran past its deadline; the operation may be retried
  kPeerLost = 3,         // a peer closed, died or sent garbage; the communicator is broken
  kSystem = 4,           // an OS call failed (errno text in the message)
  kInternal = 5,         // a bug in megascale
  kAborted = 6,          // the communicator was aborted by the user or after an earlier error
  kAuthFailed = 7,       // the peer or store did not prove it knows the job secret
  kMismatch = 8,         // ranks disagree on an operation (count, type, order)
  kUnavailable = 9,      // a feature or device that is not present here
};

const char* errorCodeName(ErrorCode code);

/// Thrown by setup paths (store, connect, init). what() carries the full scope.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

/// Returned on the data path. Allocates only when it carries an error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return isOk(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  /// Throws megascale::Error if this is an error; used where setup code calls data-path helpers.
  void throwIfError() const {
    if (!isOk()) throw Error(code_, message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

/// "strerror(errno) (errno N)"; thread-safe.
std::string errnoText(int err);

}  // namespace megascale

#define MSC_RETURN_IF_ERROR(expr)         \
  do {                                    \
    ::megascale::Status msc_status_ = (expr); \
    if (!msc_status_.isOk()) return msc_status_; \
  } while (0)
