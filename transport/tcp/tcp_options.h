// The tcp transport's own options, and its knobs (MEGASCALE_TCP_*).
#pragma once

#include <cstddef>

namespace megascale::transport {

struct TcpOptions {
  int sockets_per_comm = 2;
  // A comm connects with one socket and dials the others at its first message of stripe_min_bytes. Only for
  // listeners that are polled for as long as their comms live (a communicator's are); NCCL closes its own.
  bool lazy_stripes = false;
  size_t stripe_min_bytes = 256 * 1024;
  int dead_peer_timeout_ms = 0;  // a peer silent this long is lost (TCP_USER_TIMEOUT, keepalive); 0: system's
};

/// MEGASCALE_TCP_SOCKETS and MEGASCALE_TCP_STRIPE_MIN. Throws Error(kInvalidArgument) naming a bad value.
TcpOptions tcpOptionsFromConfig();

}  // namespace megascale::transport
