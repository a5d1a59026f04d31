// What the emulated RoCE NIC puts in a UDP datagram: a fixed header (the base transport header's fields, the
// RDMA extended header's, the immediate), then payload. Opcodes and ACK syndromes follow the IB specification
// in spirit, not in bytes: both ends are this emulation.
#pragma once

#include <cstdint>

namespace megascale::testbed::roce::wire {

enum Opcode : uint8_t {
  kSendFirst, kSendMiddle, kSendLast, kSendOnly,  // "Last"/"Only" may carry an immediate (kImmediate flag)
  kWriteFirst, kWriteMiddle, kWriteLast, kWriteOnly,
  kReadRequest, kReadResponse,
  kAck,  // syndrome says ACK or which NAK
};

enum Flags : uint8_t { kImmediate = 1, kAckRequest = 2 };

enum Syndrome : uint8_t { kAcknowledge, kRnrNak, kSequenceNak, kRemoteAccessNak, kInvalidRequestNak };

struct Header {
  uint8_t opcode;
  uint8_t flags;
  uint8_t syndrome;   // kAck only
  uint8_t rnr_timer;  // kRnrNak: the responder's min_rnr_timer code
  uint32_t dest_qpn;
  uint32_t psn;       // 24 bits; kAck: the last PSN acknowledged, or the NAKed one
  uint32_t imm;       // network order, as the caller gave it
  uint64_t remote_addr;  // first packet of a WRITE; a READ request
  uint32_t rkey;
  uint32_t length;       // whole message: first packet of a WRITE, a READ request
};
static_assert(sizeof(Header) == 32);

constexpr uint32_t kPsnMask = 0xffffff;

inline uint32_t psnAdd(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }
/// a - b in PSN space, as a signed distance (24-bit wrap).
inline int32_t psnDiff(uint32_t a, uint32_t b) {
  int32_t d = static_cast<int32_t>((a - b) & kPsnMask);
  return d >= 0x800000 ? d - 0x1000000 : d;
}

}  // namespace megascale::testbed::roce::wire
