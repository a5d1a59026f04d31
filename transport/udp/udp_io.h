// Where the udp engine's datagrams enter and leave: the flows' endpoints (one UDP port each, rail by rail), queued
// sends that leave at the end of a round, and received datagrams in batches. Two kinds: kernel sockets
// (kernel_udp_io.h: sendmmsg, recvmmsg, epoll) and DPDK (dpdk/dpdk_udp_io.h, a module loaded at run time), picked
// by MEGASCALE_UDP_IO. The engine drives either from its one thread.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/udp/udp_socket.h"

namespace megascale::transport {

/// One datagram handed to the engine: valid until the next receive() or wait().
struct ArrivedDatagram {
  const uint8_t* data;
  size_t size;
  uint8_t tos;        // its IP TOS byte (ECN in the low bits)
  int64_t waited_ns;  // how long before receive() returned it had arrived (0: unknown)
};

/// The clock the kernel stamps arrivals on (SO_TIMESTAMPNS), in ns.
inline int64_t realtimeNowNs() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

/// The clock an io's waits and retries are timed on, in ns.
inline int64_t monotonicNowNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

/// ArrivedDatagram::waited_ns of a datagram the kernel stamped `stamp_ns` (0: no stamp): a missing or
/// implausible time (a clock step) counts as just arrived.
inline int64_t waitedSinceStamp(int64_t realtime_now_ns, int64_t stamp_ns) {
  const int64_t waited = realtime_now_ns - stamp_ns;
  return stamp_ns > 0 && waited > 0 && waited < 1'000'000'000 ? waited : 0;
}

class UdpIo {
 public:
  virtual ~UdpIo() = default;
  /// Every flow's endpoint, rail by rail.
  virtual const std::vector<UdpEndpoint>& endpoints() const = 0;
  /// Queues one datagram from `flow`; false when the flow's way out was found full this round (retry later).
  virtual bool send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                    size_t payload_bytes) = 0;
  /// Sends everything queued. What cannot leave is lost (recovered as any loss); a full way out refuses until now.
  virtual void endRound() = 0;
  /// Datagrams that could not leave since the start.
  virtual uint64_t lostSends() const = 0;
  /// Returns when datagrams may be waiting, wake() was called, or `timeout_ns` passed.
  virtual void wait(int64_t timeout_ns) = 0;
  /// The next batch of waiting datagrams; empty when this wait's share is done (one busy flow cannot starve the
  /// engine's timers). `*pass_ended`: every source that had datagrams has now given a batch since the last pass
  /// ended - the engine acknowledges then, since a connection's packets are sprayed over flows that arrive on
  /// different sockets, and acknowledging one socket's batch before the next is read makes the packets still
  /// waiting on the others look overtaken, i.e. lost.
  virtual std::span<const ArrivedDatagram> receive(bool* pass_ended) = 0;
  /// Makes wait() return now (from any thread).
  virtual void wake() = 0;
};

/// What an io binds: `flows` endpoints on each rail address, the TOS class of what it sends, sends per batch.
struct UdpIoSetup {
  std::string kind = "kernel";  // kernel or dpdk
  std::vector<std::string> rails;
  int flows = 1;
  int traffic_class = -1;
  int send_batch = 32;
  bool gso = false;           // kernel: one message per run of same-sized datagrams (UDP_SEGMENT), GRO accepted
  std::string dpdk_eal_args;  // extra EAL arguments (dpdk)
  int64_t dpdk_spin_us = 0;   // dpdk: how long the engine polls without sleeping after the last frame
};

/// Opens the io `setup.kind` names. Throws Error naming the kind, the address and what failed (dpdk: the module
/// or DPDK missing, EAL refusing to start).
std::unique_ptr<UdpIo> openUdpIo(const UdpIoSetup& setup);

}  // namespace megascale::transport
