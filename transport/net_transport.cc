#include "transport/net_transport.h"

#include "common/config.h"

namespace megascale::transport {

TransportOptions transportOptionsFromConfig() {
  TransportOptions o;
  o.bind_address = config::getString("MEGASCALE_TCP_IFADDR");
  o.handshake_timeout_ms = static_cast<int>(config::timeout().count());
  o.tcp = tcpOptionsFromConfig();
  o.tcp.dead_peer_timeout_ms = o.handshake_timeout_ms;  // a cut link or dead host fails transfers, never hangs them
  o.shm = shmOptionsFromConfig();
  o.ib = ibOptionsFromConfig();
  o.udp = udpOptionsFromConfig();
  return o;
}

}  // namespace megascale::transport
