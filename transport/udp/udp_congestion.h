// The congestion control a udp connection's sender runs: congestion/'s laws, the same code the simulator runs,
// here pacing real packets. MEGASCALE_UDP_CC picks swift (delay), dcqcn (ECN echoed as CNPs, rate), hybrid
// (MegaScale's: delay and ECN) or none (the line rate).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/picoseconds.h"
#include "congestion/sender_control.h"

namespace megascale::transport {

struct UdpControlSetup {
  std::string law;          // swift, dcqcn, hybrid, none
  double line_bps = 10e9;
  size_t packet_bytes = 9000;
  size_t window_bytes = 32 << 20;
  Picoseconds target = 0;   // swift and hybrid's delay target; 0: udpDefaultTarget
};

/// 400 us, or four packets' serialization at the line rate where that is longer: a software path's round trip
/// is tens to hundreds of microseconds, and a slow link's queue needs a few packets to stay busy.
Picoseconds udpDefaultTarget(double line_bps, size_t packet_bytes);

/// Throws Error(kInvalidArgument) for an unknown law.
std::unique_ptr<congestion::SenderControl> makeUdpControl(const UdpControlSetup& setup);

}  // namespace megascale::transport
