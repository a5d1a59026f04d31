#include "transport/udp/udp_congestion.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"
#include "congestion/dcqcn.h"
#include "congestion/hybrid.h"
#include "congestion/line_rate.h"
#include "congestion/swift.h"

namespace megascale::transport {

// The backoff stops at a tenth of the give-up budget (at most a second): once a flap ends, a retry finds the
// path within that, long before the budget runs out.
congestion::RtoParams udpRtoParams(Picoseconds rto_min, Picoseconds give_up_after) {
  congestion::RtoParams p;
  p.min = rto_min;
  p.initial = std::max(rto_min, 10 * kMillisecond);  // before the first sample: a slow first path must not look lost
  p.max = std::max(rto_min, std::min(kSecond, give_up_after / 10));
  return p;
}

Picoseconds udpDefaultHeadroom(double line_bps, size_t packet_bytes) {
  return std::max<Picoseconds>(100 * kMicrosecond, 4 * serializationTime(packet_bytes, line_bps));
}

std::unique_ptr<congestion::SenderControl> makeUdpControl(const UdpControlSetup& s) {
  congestion::SwiftParams swift;
  swift.line_rate_bps = s.line_bps;
  swift.base_target = s.target > 0 ? s.target : udpDefaultHeadroom(s.line_bps, s.packet_bytes);
  swift.target_above_floor = s.target == 0;
  swift.hops = 0;  // the target is the whole path's: no per-hop scaling
  swift.per_hop = 0;
  swift.flow_scaling_range = swift.base_target;
  swift.max_cwnd = std::max(2.0, static_cast<double>(s.window_bytes) / static_cast<double>(s.packet_bytes));
  swift.flow_scaling_max_cwnd = swift.max_cwnd;
  // A flow that joined a standing queue took it for the path's floor; the flows that saw the path empty
  // starved behind it in the simulator (4-to-1 incasts 0.65-0.85x the test bed's time, 1.02-1.11x with these).
  // The test bed's queue p99 in those incasts rose from ~110 KB to 180-250 KB; without the decay it ratcheted
  // (p99 up to 316 KB, Jain's mean down to 0.80).
  swift.relearn_floor_after_rtts = 8;
  swift.floor_decay_rtts = 32;
  // A window above what the line rate needs for twice the headroom only queues: each joining flow would add it
  // to the bottleneck at once (64 jumbo packets, 576 KB, filled a 1 MB buffer in a 4-to-1 incast at 500 Mbit/s).
  const double needed = 2 * static_cast<double>(udpDefaultHeadroom(s.line_bps, s.packet_bytes)) * s.line_bps / 8 /
                        static_cast<double>(kSecond) / static_cast<double>(s.packet_bytes);
  swift.initial_cwnd = std::min(swift.max_cwnd, std::clamp(std::ceil(needed), 2.0, 64.0));
  if (s.law == "swift") return std::make_unique<congestion::Swift>(swift);
  if (s.law == "hybrid") {
    congestion::HybridParams hybrid;
    hybrid.swift = swift;
    hybrid.ecn_once_per_rtt = true;
    return std::make_unique<congestion::Hybrid>(hybrid);
  }
  if (s.law == "dcqcn") {
    return std::make_unique<congestion::Dcqcn>(congestion::DcqcnParams::firmware(s.line_bps));
  }
  if (s.law == "none") return std::make_unique<congestion::LineRate>(s.line_bps);
  throw Error(ErrorCode::kInvalidArgument, "udp: unknown congestion control '" + s.law + "'");
}

}  // namespace megascale::transport
