// What TCP comms put on the wire.
//   hello (authenticated by the handshake): u64 local id | u64 connection token | u16 socket index | u16 sockets |
//   u16 traffic class + 1 (0: none; the accepting side marks its end of the socket with the connecting side's) |
//   u16 flags (kLazy: socket 0 of a comm whose other sockets join later; kJoin: such a later socket)
//   per message, on socket 0: u32 tag | u16 parts | u16 zero | u64 size, then part 0 of the payload; parts 1..
//   on sockets 1..
// The sender cuts a message of at least stripe_min bytes into one contiguous part per socket it has ready, and
// says how many in the header, so both sides know every part's extent and each socket streams independently.
// With lazy stripes a comm starts with one socket and dials the others at its first large message: a
// connection that only ever carries small messages (most of a large job's) costs one socket, not several.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/auth.h"

namespace megascale::transport::tcp_wire {

struct HelloInfo {
  uint64_t local_id;
  uint64_t token;
  uint16_t socket_index;
  uint16_t sockets;
  int traffic_class = -1;  // the IP TOS byte the connecting side uses, -1 for the system's
  uint16_t flags = 0;
};

constexpr uint16_t kLazy = 1;
constexpr uint16_t kJoin = 2;
constexpr int kMaxSockets = 64;

inline Hello encodeHello(const HelloInfo& h) {
  Hello out{};
  std::memcpy(out.data(), &h.local_id, 8);
  std::memcpy(out.data() + 8, &h.token, 8);
  std::memcpy(out.data() + 16, &h.socket_index, 2);
  std::memcpy(out.data() + 18, &h.sockets, 2);
  const uint16_t tos = static_cast<uint16_t>(h.traffic_class < 0 ? 0 : (h.traffic_class & 0xff) + 1);
  std::memcpy(out.data() + 20, &tos, 2);
  std::memcpy(out.data() + 22, &h.flags, 2);
  return out;
}

inline HelloInfo decodeHello(const Hello& in) {
  HelloInfo h;
  std::memcpy(&h.local_id, in.data(), 8);
  std::memcpy(&h.token, in.data() + 8, 8);
  std::memcpy(&h.socket_index, in.data() + 16, 2);
  std::memcpy(&h.sockets, in.data() + 18, 2);
  uint16_t tos;
  std::memcpy(&tos, in.data() + 20, 2);
  h.traffic_class = tos == 0 || tos > 256 ? -1 : tos - 1;
  std::memcpy(&h.flags, in.data() + 22, 2);
  return h;
}

constexpr size_t kHeaderBytes = 16;

inline void encodeHeader(uint32_t tag, int parts, uint64_t size, uint8_t out[kHeaderBytes]) {
  const uint16_t p = static_cast<uint16_t>(parts);
  const uint16_t zero = 0;
  std::memcpy(out, &tag, 4);
  std::memcpy(out + 4, &p, 2);
  std::memcpy(out + 6, &zero, 2);
  std::memcpy(out + 8, &size, 8);
}

/// The parts field as sent: the receiver checks it against the sockets the comm may have.
inline void decodeHeader(const uint8_t in[kHeaderBytes], uint32_t* tag, int* parts, uint64_t* size) {
  uint16_t p;
  std::memcpy(tag, in, 4);
  std::memcpy(&p, in + 4, 2);
  std::memcpy(size, in + 8, 8);
  *parts = p;
}

/// Number of parts a message of `size` bytes is cut into, with `sockets` ready to carry them.
inline int partsFor(uint64_t size, int sockets, size_t stripe_min) {
  return (sockets > 1 && size >= stripe_min) ? sockets : 1;
}

/// [begin, end) of part `index` of a message cut into `parts`; empty when index >= parts.
inline void partExtent(uint64_t size, int parts, int index, uint64_t* begin, uint64_t* end) {
  if (index >= parts) {
    *begin = *end = 0;
    return;
  }
  *begin = size / parts * index;
  *end = index == parts - 1 ? size : size / parts * (index + 1);
}

}  // namespace megascale::transport::tcp_wire
