// One end of a udp connection as the engine (udp_engine.h) drives it: a sending half (udp_sender.h) or a
// receiving half (udp_receiver.h). The engine hands it the packets addressed to its connection id and calls
// step() when it asked to be woken; the half sends through a DatagramOut, which a test replaces with a lossy
// in-memory wire.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>

#include "common/picoseconds.h"
#include "transport/udp/udp_wire.h"

namespace megascale::transport {

class DatagramOut {
 public:
  virtual ~DatagramOut() = default;
  /// One datagram from local flow `flow` to `to`; false when it could not leave now (a full socket buffer).
  virtual bool send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                    size_t payload_bytes) = 0;
};

class UdpHalf {
 public:
  virtual ~UdpHalf() = default;
  /// A datagram for this connection (its header already checked); `tos`: its IP TOS byte (ECN in the low bits);
  /// `arrived`: when the kernel received it (its receive timestamp on the engine's clock, at or before now), so
  /// that the time the engine took to get to it counts as neither side's network delay.
  virtual void onPacket(const udp_wire::Header& header, const uint8_t* datagram, size_t size, uint8_t tos,
                        Picoseconds arrived) = 0;
  /// The engine has handed over every datagram of a receive batch (acknowledgements go out once per batch).
  virtual void endOfBatch(Picoseconds now) { (void)now; }
  /// Sends what it may now; returns when it next needs to run (kNever: only when a packet or a post arrives).
  virtual Picoseconds step(Picoseconds now) = 0;
};

}  // namespace megascale::transport
