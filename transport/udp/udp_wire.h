// What the udp transport puts in a datagram. Every packet starts with a Header naming the connection it is for
// (an id the two ends swapped over the authenticated setup socket: a datagram naming no connection of ours is
// dropped) and the path it travels; a data packet carries a piece of one message, an acknowledgement the
// receiver's view of the sequence space (cumulative plus a 64-packet SACK bitmap) and how many bytes it holds
// for receives not yet posted (flow control) and how long it sat on the packet it answers. Both ends are megascale of one build: fields are host order.
// Everything read from the network is checked (parseData, parseAck): a malformed datagram is dropped, never
// trusted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace megascale::transport::udp_wire {

constexpr uint32_t kMagic = 0x3150534d;  // "MSP1"

enum Kind : uint8_t { kData = 1, kAck = 2, kProbe = 3 };

enum Flags : uint8_t {
  kEcnEcho = 1,       // ack: the packet acknowledged arrived marked CE
  kCnp = 2,           // ack: a congestion notification (DCQCN's), at most one per interval
  kWindowUpdate = 4,  // ack: no packet acknowledged, only the receiver's held bytes (seq and sent_ns unused)
  kProbeReply = 8,    // ack: answers probe `seq` on `path`
};

struct Header {
  uint32_t magic;
  uint8_t kind;
  uint8_t flags;
  uint16_t path;        // the path (flow) the packet left on; an ack: the one of the packet it answers
  uint64_t connection;  // the receiving end's connection id
  uint64_t seq;         // data: its sequence number; probe: the probe's; ack: the one it answers
  int64_t sent_ns;      // data and probe: the sender's clock; ack: echoed from the packet it answers
};

struct Data {
  uint64_t message;  // the message's number on the connection, from 0
  uint64_t size;     // the message's size
  uint64_t offset;   // where this payload goes in it
  uint32_t tag;
  uint32_t bytes;    // payload bytes that follow
};

constexpr uint64_t kSackBits = 64;

struct Ack {
  uint64_t cumulative;  // every sequence number below arrived
  uint64_t sack;        // bit i: cumulative + 1 + i arrived (i < kSackBits)
  uint64_t held_bytes;  // what the receiver holds for receives not yet posted
  uint64_t number;      // the receiver's count of acknowledgements, from 1: the newest tells held_bytes
  int64_t delay_ns;     // how long the receiver held the packet it answers before this left (its own delay,
                        // which the sender's congestion control leaves out of the round trip)
};

constexpr size_t kDataHeaderBytes = sizeof(Header) + sizeof(Data);
constexpr size_t kAckBytes = sizeof(Header) + sizeof(Ack);
constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 40;

/// The header of a datagram of `size` bytes, if it is one of ours.
inline bool parseHeader(const uint8_t* datagram, size_t size, Header* h) {
  if (size < sizeof(Header)) return false;
  std::memcpy(h, datagram, sizeof(*h));
  return h->magic == kMagic && (h->kind == kData || h->kind == kAck || h->kind == kProbe);
}

/// A data packet's piece: consistent with the datagram's size and with itself.
inline bool parseData(const uint8_t* datagram, size_t size, Data* d) {
  if (size < kDataHeaderBytes) return false;
  std::memcpy(d, datagram + sizeof(Header), sizeof(*d));
  return d->bytes == size - kDataHeaderBytes && d->size <= kMaxMessageBytes && d->offset <= d->size &&
         d->bytes <= d->size - d->offset;
}

inline bool parseAck(const uint8_t* datagram, size_t size, Ack* a) {
  if (size != kAckBytes) return false;
  std::memcpy(a, datagram + sizeof(Header), sizeof(*a));
  return true;
}

}  // namespace megascale::transport::udp_wire
