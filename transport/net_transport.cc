#include "transport/net_transport.h"

#include "common/config.h"

namespace megascale::transport {

TransportOptions transportOptionsFromConfig() {
  TransportOptions o;
  int64_t sockets = config::getInt("MEGASCALE_TCP_SOCKETS");
  if (sockets < 1 || sockets > 64) throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_TCP_SOCKETS must be 1..64");
  o.sockets_per_comm = static_cast<int>(sockets);
  int64_t stripe = config::getInt("MEGASCALE_TCP_STRIPE_MIN");
  if (stripe < 0) throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_TCP_STRIPE_MIN must be >= 0");
  o.stripe_min_bytes = static_cast<size_t>(stripe);
  int64_t ring = config::getInt("MEGASCALE_SHM_RING_BYTES");
  if (ring < 4096) throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_SHM_RING_BYTES must be >= 4096");
  o.shm_ring_bytes = static_cast<size_t>(ring);
  o.bind_address = config::getString("MEGASCALE_TCP_IFADDR");
  o.handshake_timeout_ms = static_cast<int>(config::timeout().count());
  o.dead_peer_timeout_ms = o.handshake_timeout_ms;  // a cut link or dead host fails transfers, never hangs them
  return o;
}

}  // namespace megascale::transport
