// The one place where exceptions stop on their way out of the plugin: NCCL is C, and sees only result codes.
#pragma once

#include <exception>
#include <new>

#include "common/status.h"
#include "nccl_plugin/net_abi.h"

namespace megascale::nccl_plugin {

/// NCCL's code for one of our errors: network and OS failures are system errors; ranks that disagree (a
/// message larger than its receive) are usage errors, as NCCL's own socket transport says; a bad argument is
/// NCCL's; anything else is internal.
inline nccl_abi::Result resultFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kPeerLost:
    case ErrorCode::kTimeout:
    case ErrorCode::kSystem:
    case ErrorCode::kAuthFailed:
    case ErrorCode::kUnavailable:
      return nccl_abi::kSystemError;
    case ErrorCode::kMismatch:
      return nccl_abi::kInvalidUsage;
    case ErrorCode::kInvalidArgument:
      return nccl_abi::kInvalidArgument;
    default:
      return nccl_abi::kInternalError;
  }
}

/// Runs body() (which returns a Result). An exception it throws becomes the matching code, reported once
/// through report(operation, message); nothing unwinds into NCCL.
template <typename Body, typename Report>
nccl_abi::Result callGuarded(const char* operation, Body&& body, Report&& report) noexcept {
  try {
    return body();
  } catch (const Error& e) {
    report(operation, e.what());
    return resultFor(e.code());
  } catch (const std::bad_alloc&) {
    report(operation, "out of memory");
    return nccl_abi::kSystemError;
  } catch (const std::exception& e) {
    report(operation, e.what());
    return nccl_abi::kInternalError;
  } catch (...) {
    report(operation, "unknown exception");
    return nccl_abi::kInternalError;
  }
}

}  // namespace megascale::nccl_plugin
