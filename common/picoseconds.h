// Time for congestion control, retransmission timers and the packet simulator: picoseconds on one monotonic
// clock (the simulator's, or a transport's steady clock), so 400 Gb/s serialization (20 ps per byte) stays exact
// in integers. It lives in common/ because transports, the control laws below them and the simulator above
// collectives all speak it.
#pragma once

#include <cstdint>
#include <limits>

namespace megascale {

using Picoseconds = int64_t;
constexpr Picoseconds kNanosecond = 1000;
constexpr Picoseconds kMicrosecond = 1000 * kNanosecond;
constexpr Picoseconds kMillisecond = 1000 * kMicrosecond;
constexpr Picoseconds kSecond = 1000 * kMillisecond;
constexpr Picoseconds kNever = std::numeric_limits<Picoseconds>::max();

/// Bits per second -> picoseconds to serialize `bytes`.
constexpr Picoseconds serializationTime(uint64_t bytes, double bits_per_second) {
  return static_cast<Picoseconds>(static_cast<double>(bytes) * 8.0 * 1e12 / bits_per_second);
}

}  // namespace megascale
