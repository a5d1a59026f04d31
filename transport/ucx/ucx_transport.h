// The UCX transport: UCP tagged messages over whatever UCX_TLS allows (shared memory and tcp here; RDMA where
// the host has it), connected through UCX's socket-address listener. Each connection proves the job secret
// over the endpoint's stream before its first message (ucx_endpoint.h).
#pragma once

#include <memory>

#include "transport/transport.h"
#include "transport/ucx/ucx_worker.h"

namespace megascale::transport {

class UcxTransport : public Transport {
 public:
  /// Throws Error(kUnavailable) when UCX finds no usable transport.
  explicit UcxTransport(const TransportOptions& options);
  const Properties& properties() const override { return properties_; }
  std::unique_ptr<Listener> listen() override;
  std::unique_ptr<Connector> connect(const Address& address, uint64_t local_id) override;

 private:
  TransportOptions options_;
  Properties properties_;
  std::shared_ptr<UcxWorker> worker_;
};

}  // namespace megascale::transport
