// The ECN field of an Ethernet frame's IP header, read and marked as a switch's egress does: IPv4 (with its
// header checksum updated in place) and IPv6, no VLAN tags (the test bed's links carry none).
#pragma once

#include <cstddef>
#include <cstdint>

namespace megascale::testbed {

enum class FrameClass {
  kData,     // IP traffic at low precedence: the queue that fills, marks and drops
  kControl,  // IP precedence 4-7 (DSCP >= 32) and non-IP frames (ARP): a strict-priority queue, never marked
};

/// kControl for IP precedence >= 4 (the TOS byte's top bit, as tc's priority filter of the link shaper) and for
/// frames that carry no IP; kData otherwise.
FrameClass classify(const uint8_t* frame, size_t size);

/// The ECN codepoint (0 Not-ECT, 1 ECT(1), 2 ECT(0), 3 CE) of an IP frame; -1 for a frame that carries no IP or
/// is too short to hold its header.
int ecnCodepoint(const uint8_t* frame, size_t size);

/// Marks an ECN-capable frame Congestion Experienced (RFC 3168), fixing the IPv4 header checksum (RFC 1624).
/// False, and the frame untouched, when it is not ECN-capable (a switch would drop it instead of marking; the
/// test bed lets it through) or already marked.
bool markCongestionExperienced(uint8_t* frame, size_t size);

}  // namespace megascale::testbed
