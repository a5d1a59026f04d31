// The udp transport's own options, and its knobs (MEGASCALE_UDP_*): how many flows a connection sprays its
// packets over, the congestion control, the packet size, the receive window, and the retransmission budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace megascale::transport {

struct UdpOptions {
  int flows = 4;                     // UDP flows (source ports) per connection, each a path of its own
  std::string congestion = "swift";  // swift, dcqcn, hybrid or none
  size_t payload_bytes = 0;          // bytes of message per packet; 0: the interface's MTU allows
  size_t window_bytes = 32 << 20;    // bytes in flight plus bytes the receiver holds for receives not posted
  int64_t line_mbps = 0;             // the rate the control starts from and never exceeds; 0: the interface's
  int64_t rto_min_us = 1000;         // the retransmission timeout's floor
  int64_t target_delay_us = 0;       // swift and hybrid: the RTT they aim for; 0: from the line rate
  int64_t give_up_ms = 30000;        // a connection that delivers nothing this long fails, naming the peer
  int64_t path_down_ms = 20;         // a flow that delivers nothing this long while others do leaves the spray
};

/// The MEGASCALE_UDP_* knobs. Throws Error(kInvalidArgument) naming a bad value.
UdpOptions udpOptionsFromConfig();

}  // namespace megascale::transport
