// The udp transport's own options, and its knobs (MEGASCALE_UDP_*): which rails and how many flows on each a
// connection sprays its packets over, the congestion control, the packet size, the receive window, and the retransmission budget.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace megascale::transport {

struct UdpOptions {
  int flows = 4;                     // UDP flows (source ports) per rail, each a path of its own
  std::string rails;                 // interfaces whose addresses are rails, NCCL_SOCKET_IFNAME syntax ("rail":
                                     // rail0, rail1, ...); "": the transport's bind address alone
  std::string congestion = "swift";  // swift, dcqcn, hybrid or none
  size_t payload_bytes = 0;          // bytes of message per packet; 0: the interface's MTU allows
  size_t window_bytes = 32 << 20;    // bytes in flight plus bytes the receiver holds for receives not posted
  int64_t line_mbps = 0;             // one rail's rate; a connection starts at and never exceeds the rails' sum;
                                     // 0: the interface's speed
  int64_t rto_min_us = 1000;         // the retransmission timeout's floor
  int64_t target_delay_us = 0;       // swift and hybrid: the RTT they aim for; 0: from the line rate
  int64_t give_up_ms = 30000;        // a connection that delivers nothing this long fails, naming the peer
  int64_t path_down_ms = 20;         // a flow that delivers nothing this long while others do leaves the spray
  int send_batch = 32;               // datagrams per sendmmsg on a socket (per burst on DPDK); 1: one each
  bool gso = false;                  // kernel io: segmentation and receive coalescing offloads (UDP_SEGMENT, UDP_GRO)
  std::string io = "kernel";         // kernel (sockets) or dpdk (the af_packet vdev on each rail's interface)
  std::string dpdk_eal_args;         // dpdk: EAL arguments added to the transport's own
  int64_t dpdk_spin_us = 0;          // dpdk: the engine polls without sleeping this long after the last frame
};

/// The MEGASCALE_UDP_* knobs. Throws Error(kInvalidArgument) naming a bad value.
UdpOptions udpOptionsFromConfig();

}  // namespace megascale::transport
