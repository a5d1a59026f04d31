// The flush after a receive into GPU memory, as NCCL's IB transport does it: an RDMA READ of one byte of the
// received buffer over a queue pair connected to itself. The NIC returns the read only after its earlier writes
// to that memory have reached it (PCIe orders a read behind the writes before it), so once the read completes
// the GPU sees the whole message. A connection over several NICs reads through each: every one of them wrote.
// Made at a comm's first flush: comms that never touch device memory pay nothing.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "transport/ibverbs/ib_connection.h"
#include "transport/ibverbs/transfer_registration.h"
#include "transport/transport.h"

namespace megascale::transport {

class IbFlush {
 public:
  /// Creates and connects a loopback queue pair on each device (the connection's rails). Throws Error naming the
  /// device.
  IbFlush(const std::vector<std::shared_ptr<IbDevice>>& rails, const IbQpSettings& settings, std::string peer);

  /// Posts the read of the byte at `data` (registered on every rail) through each rail. *request is null when
  /// every flush slot is in use.
  Status post(const void* data, const IbRegistration& registration, Request** request);
  /// Whether `request` is one of this flush's.
  bool owns(const Request* request) const;
  /// Drives the loopback queue; *done once the read of `request` completed.
  Status test(Request* request, bool* done);

 private:
  struct Slot : Request {
    bool in_use = false;
    int outstanding = 0;  // reads not yet completed
  };
  Status progress();

  RegisteredArray<uint64_t, kMaxRequests> landing_;  // where each read's byte lands (host memory)
  std::shared_ptr<IbQpSet> qps_;  // declared after landing_: destroyed first, so no read lands after it goes
  std::string peer_;             // the comm's peer, for errors
  std::array<Slot, kMaxRequests> slots_;
};

}  // namespace megascale::transport
