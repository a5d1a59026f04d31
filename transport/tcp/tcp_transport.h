// TCP transport: several sockets per comm (striping large messages), non-blocking everywhere, every socket
// authenticated with the job secret before it carries a byte of data.
#pragma once

#include "transport/transport.h"

namespace megascale::transport {

class TcpTransport : public Transport {
 public:
  explicit TcpTransport(const TransportOptions& options);
  const Properties& properties() const override { return properties_; }
  std::unique_ptr<Listener> listen() override;
  std::unique_ptr<Connector> connect(const Address& address, uint64_t local_id) override;

 private:
  TransportOptions options_;
  Properties properties_;
};

}  // namespace megascale::transport
