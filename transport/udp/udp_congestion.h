// The congestion control a udp connection's sender runs: congestion/'s laws, the same code the simulator runs,
// here pacing real packets. MEGASCALE_UDP_CC picks swift (delay), dcqcn (ECN echoed as CNPs, rate), hybrid
// (MegaScale's: delay and ECN) or none (the line rate).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "common/picoseconds.h"
#include "congestion/rto_estimator.h"
#include "congestion/sender_control.h"

namespace megascale::transport {

struct UdpControlSetup {
  std::string law;          // swift, dcqcn, hybrid, none
  double line_bps = 10e9;
  size_t packet_bytes = 9000;
  size_t window_bytes = 32 << 20;
  Picoseconds target = 0;   // swift and hybrid's delay target, the whole RTT; 0: udpDefaultHeadroom above the floor
};

/// The queueing delay swift and hybrid aim at above the lowest RTT the path has shown, when no target is set:
/// four packets' serialization at the line rate (the queue a link needs to stay busy), at least 100 us (the
/// jitter of a software endpoint's scheduling). The floor holds the endpoints' own delay, which differs from
/// machine to machine (a fixed 400 us target was below this test bed's unloaded RTT: 55% of a 1 Gbit/s link).
Picoseconds udpDefaultHeadroom(double line_bps, size_t packet_bytes);

/// The retransmission timer's settings for a connection with this floor and give-up budget (the simulator's
/// udp-* laws run with them too).
congestion::RtoParams udpRtoParams(Picoseconds rto_min, Picoseconds give_up_after);

/// Throws Error(kInvalidArgument) for an unknown law.
std::unique_ptr<congestion::SenderControl> makeUdpControl(const UdpControlSetup& setup);

}  // namespace megascale::transport
