// The udp transport: reliable, ordered messages over UDP datagrams with our own congestion control, loss
// recovery and multipath - the Ultra Ethernet / UCCL idea in software. Setup is one authenticated exchange over
// the setup socket (oob_link.h: the job secret, then each side's connection id, flows and payload size); the
// first message needs no further round trip. Data: udp_sender.h and udp_receiver.h on an engine thread per
// transport (udp_engine.h) whose flows' sockets every connection of the transport shares: MEGASCALE_UDP_FLOWS on
// each rail (MEGASCALE_UDP_RAILS), rail by rail, so that path i joins the two ends' same rail and flow.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"
#include "transport/udp/udp_engine.h"

namespace megascale::transport {

class UdpTransport : public Transport {
 public:
  /// Binds the flows' sockets and starts the engine. Throws Error naming the address.
  explicit UdpTransport(const TransportOptions& options);
  const Properties& properties() const override { return properties_; }
  std::unique_ptr<Listener> listen() override;
  std::unique_ptr<Connector> connect(const Address& address, uint64_t local_id) override;

 private:
  TransportOptions options_;
  Properties properties_;
  std::string ipv4_;                // the setup socket's address
  std::vector<std::string> rails_;  // the flows' addresses: every rail, or ipv4_ alone
  size_t payload_bytes_;
  double line_bps_;
  std::shared_ptr<UdpEngine> engine_;
};

}  // namespace megascale::transport
