// A UCX endpoint to a peer's worker. It asks UCX for no error handling: shared memory cannot report a peer's
// failure to UCX, so the comm's setup socket reports it for every transport alike, and UCX skips its keepalives.
#pragma once

#include <memory>
#include <string>

#include "transport/ucx/ucx_worker.h"

namespace megascale::transport {

class UcxEndpoint {
 public:
  /// Connects to a worker address (lock held). `peer` names the other side in every error. Throws Error
  /// (kPeerLost) when UCX finds no way to reach it.
  UcxEndpoint(std::shared_ptr<UcxWorker> worker, const std::string& worker_address, std::string peer);
  /// Closes the endpoint, flushing what is in flight unless the peer is gone (lock taken here: call without it).
  ~UcxEndpoint();
  UcxEndpoint(const UcxEndpoint&) = delete;
  UcxEndpoint& operator=(const UcxEndpoint&) = delete;

  /// A peer known dead is not flushed to at the close (a flush would wait out its timeout).
  void peerGone() { flush_on_close_ = false; }

  ucp_ep_h ep() const { return ep_; }
  UcxWorker& worker() const { return *worker_; }
  const std::string& peer() const { return peer_; }

 private:
  std::shared_ptr<UcxWorker> worker_;
  std::string peer_;
  ucp_ep_h ep_ = nullptr;
  bool flush_on_close_ = true;
};

}  // namespace megascale::transport
