// The control messages of the ibverbs transport.
// - A receive sends a clear-to-send (CTS) with a SEND to the sending side: where each posted buffer is
//   (address, rkey, capacity, tag) and where its sizes go.
// - A large message waits for its CTS; the sender RDMA-writes its size into that sizes array, then the message
//   itself, striped over the queue pairs (part q on queue pair q, which runs over the sender's NIC q mod its NICs
//   to the receiver's q mod its NICs, with that NIC's rkey from the CTS), each part ending with an RDMA WRITE with
//   immediate whose immediate names the receive and the buffer.
// - A small message (<= kEagerBytes) goes at once as a SEND on queue pair 0 into one of the receiver's bounce
//   buffers (EagerHeader + payload), unless an earlier message still waits for its CTS (order is kept).
// Both sides assign messages to posted buffers by the same rule, in message order: the first unassigned buffer
// with the message's tag in the oldest receive that has one. The sender replays it as CTSs arrive (a small
// message sent before its CTS fills its buffer without data moving); the receiver applies it as SENDs arrive
// (the write completions of earlier large messages reach it first: same queue pair) or, for a message no
// receive took yet, when the next receive is posted.
#pragma once

#include <cstdint>

#include "transport/transport.h"

namespace megascale::transport {

/// The most NICs (ports) one transport stripes a connection over: NCCL merges at most 4 into a virtual device.
constexpr int kMaxRails = 4;

}  // namespace megascale::transport

namespace megascale::transport::ib_wire {

struct CtsEntry {
  uint64_t addr;
  uint64_t capacity;
  uint32_t rkey[kMaxRails];  // the buffer's key on each of the receiver's NICs (part q lands through rail q mod rails)
  uint32_t tag;
  uint32_t reserved;
};

struct Cts {
  uint32_t slot;       // the receive's request slot, echoed nowhere: for logs and checks
  uint32_t count;      // buffers in the grouped receive, 1..kMaxRecvs
  uint64_t sizes_addr;  // uint64_t sizes[count]: the sender writes each message's size here first
  uint32_t sizes_rkey;
  uint32_t reserved;
  CtsEntry entries[kMaxRecvs];
};

// The immediate: the receive's slot, the buffer's index, and a flag for a message larger than its buffer (no
// data follows).
constexpr uint32_t kEntryMask = 0xff;
constexpr uint32_t kTooLarge = 0x100;
constexpr int kSlotShift = 9;

struct EagerHeader {
  uint32_t tag;
  uint32_t size;
};
constexpr size_t kEagerBytes = 8192;
constexpr size_t kBounceBytes = sizeof(EagerHeader) + kEagerBytes;

// A part's RDMA writes are cut at this size (the IB limit on one message is 2 GiB).
constexpr uint64_t kMaxWriteBytes = uint64_t{1} << 30;

}  // namespace megascale::transport::ib_wire
