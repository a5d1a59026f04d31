// The ibverbs transport for a test, or why there is none here (no RDMA device: ctest runs these programs on the
// emulated device, a plain run on this machine skips them).
#pragma once

#include <memory>
#include <string>

#include "transport/ibverbs/ib_transport.h"

namespace megascale::transport::testing {

/// The transport, or null with *why set when the device or libibverbs is unavailable; other errors throw.
inline std::unique_ptr<IbTransport> ibTransportOrWhy(const TransportOptions& options, std::string* why) {
  try {
    return std::make_unique<IbTransport>(options);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnavailable) throw;
    *why = std::string(e.what()) + " (ctest runs this on the emulated device)";
    return nullptr;
  }
}

}  // namespace megascale::transport::testing
