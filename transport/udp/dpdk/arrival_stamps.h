// When each frame the DPDK io hands over came off the wire. DPDK 22.11's af_packet device stamps no frame, and
// a time taken when the engine got round to it would put its scheduling into every RTT sample (swift and the
// hybrid then judge the queue by how busy each host was). The kernel still delivers each frame's doorbell to
// the flow's socket - the first bytes of its datagram, stamped on arrival (SO_TIMESTAMPNS) - so a frame's time is
// its doorbell's, found by those bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "transport/udp/udp_wire.h"

namespace megascale::transport {

class ArrivalStamps {
 public:
  /// What a doorbell keeps of a datagram: shorter than any of ours (a header-only probe is the shortest), so a
  /// datagram the socket keeps whole (from another process of this host) is never taken for one.
  static constexpr size_t kDoorbellBytes = sizeof(udp_wire::Header) - 1;

  /// A doorbell's bytes and its kernel time; other sizes are ignored.
  void onDoorbell(const uint8_t* bytes, size_t size, int64_t realtime_ns);
  /// The kernel time of the doorbell `datagram` rang, forgotten once taken; 0 when none did (the doorbell is not
  /// read yet, or was lost).
  int64_t take(const uint8_t* datagram, size_t size);
  size_t remembered() const { return stamps_.size(); }

 private:
  // Doorbells whose frame never came (the device's ring overflowed) would pile up: past this many, all go.
  static constexpr size_t kMostRemembered = 1 << 16;
  std::unordered_map<uint64_t, int64_t> stamps_;  // by a hash of the doorbell's bytes
};

}  // namespace megascale::transport
