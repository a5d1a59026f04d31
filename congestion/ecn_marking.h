// The switch side of DCQCN (the congestion point): RED-style ECN marking on an egress queue's length.
#pragma once

#include <cstdint>

namespace megascale::congestion {

struct EcnThresholds {
  uint64_t k_min_bytes = 400 * 1000;  // no marking at or below
  uint64_t k_max_bytes = 1600 * 1000;  // always marking above
  double p_max = 0.2;                  // marking probability just below k_max

  /// The HPCC simulator's per-speed setting (K_min 400 KB, K_max 1600 KB, P_max 0.2 at 100G), scaled linearly
  /// with the link's rate.
  static EcnThresholds scaledTo(double link_bps) {
    const double scale = link_bps / 100e9;
    return {static_cast<uint64_t>(400e3 * scale), static_cast<uint64_t>(1600e3 * scale), 0.2};
  }
};

/// The probability that a packet leaving a queue of `queue_bytes` is marked: 0 up to K_min, rising linearly to
/// P_max at K_max, 1 above.
inline double markingProbability(uint64_t queue_bytes, const EcnThresholds& t) {
  if (queue_bytes <= t.k_min_bytes) return 0;
  if (queue_bytes > t.k_max_bytes) return 1;
  return t.p_max * static_cast<double>(queue_bytes - t.k_min_bytes) / static_cast<double>(t.k_max_bytes - t.k_min_bytes);
}

/// Whether to mark, given a uniform draw in [0, 1).
inline bool shouldMark(uint64_t queue_bytes, const EcnThresholds& t, double uniform) {
  return uniform < markingProbability(queue_bytes, t);
}

}  // namespace megascale::congestion
