// Shared-memory transport for peers on the same host: an authenticated Unix socket handshake hands the
// receiver a memfd holding the sender's ring; data then moves without the kernel (small messages) or with
// one process_vm_readv (large ones).
#pragma once

#include "transport/transport.h"

namespace megascale::transport {

class ShmTransport : public Transport {
 public:
  explicit ShmTransport(const TransportOptions& options);
  const Properties& properties() const override { return properties_; }
  std::unique_ptr<Listener> listen() override;
  std::unique_ptr<Connector> connect(const Address& address, uint64_t local_id) override;

  /// Messages at least this large go by cross-memory attach when the receiver can read the sender.
  static constexpr size_t kRemoteMinBytes = 64 * 1024;

 protected:
  bool reaches(const Address& address) const override;

 private:
  TransportOptions options_;
  Properties properties_;
};

/// This machine's boot id and network namespace: two processes with the same one share memory and can reach
/// each other's abstract Unix sockets.
std::string hostIdentity();

}  // namespace megascale::transport
