// The udp transport's engine: the flows' io of one transport (udp_io.h: kernel sockets or DPDK) and a thread that
// plays the NIC - it reads every datagram, hands it to the connection half its header names (udp_half.h), and steps each half
// when it asked (pacing, retransmission timers, probes), so transfers move and are retransmitted while no caller
// drives a comm, as on a NIC. Halves are touched only under mutex(): comms take it to post and to test.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "transport/udp/udp_half.h"
#include "transport/udp/udp_io.h"

namespace megascale::transport {

class UdpEngine : public DatagramOut {
 public:
  /// Opens the io (`setup.flows` endpoints on each rail) and starts the thread. Throws Error naming the address.
  explicit UdpEngine(const UdpIoSetup& setup);
  ~UdpEngine() override;
  UdpEngine(const UdpEngine&) = delete;
  UdpEngine& operator=(const UdpEngine&) = delete;

  const std::vector<UdpEndpoint>& endpoints() const { return io_->endpoints(); }
  std::mutex& mutex() { return mutex_; }
  /// A fresh connection id: random, never 0, never one attached.
  uint64_t newConnectionId();
  /// Packets naming `id` go to `half`, which is stepped from now on (lock held).
  void attach(uint64_t id, UdpHalf* half);
  /// The engine forgets `id` (lock held): once the lock is released it never touches its half again.
  void detach(uint64_t id);
  /// Wakes the thread to step every half (a message was posted).
  void wake();
  Picoseconds now() const;
  /// Queues the datagram on the flow's batch (sent when the batch fills or the round ends); false when the
  /// flow's way out was found full this round (the caller retries later).
  bool send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
            size_t payload_bytes) override;
  /// Datagrams queued that could not leave (full socket buffers): lost, recovered as any loss.
  uint64_t lostSends() const { return io_->lostSends(); }

 private:
  void run();
  void deliver(std::span<const ArrivedDatagram> batch);
  /// The halves the datagrams since the last call reached send their acknowledgements (once per pass).
  void acknowledge();

  std::unique_ptr<UdpIo> io_;
  std::unordered_map<uint64_t, UdpHalf*> halves_;
  std::vector<UdpHalf*> touched_;  // the halves this pass's datagrams reached (kept: no allocation per batch)
  std::mutex mutex_;
  std::atomic<bool> stopping_{false};
  std::chrono::steady_clock::time_point start_;
  std::thread thread_;
};

/// A half attached to an engine for as long as this lives (declared after the half it attaches, so it detaches
/// first).
class UdpAttachment {
 public:
  UdpAttachment(std::shared_ptr<UdpEngine> engine, uint64_t id, UdpHalf* half);
  ~UdpAttachment();
  UdpAttachment(const UdpAttachment&) = delete;
  UdpAttachment& operator=(const UdpAttachment&) = delete;
  uint64_t id() const { return id_; }

 private:
  std::shared_ptr<UdpEngine> engine_;
  uint64_t id_;
};

}  // namespace megascale::transport
