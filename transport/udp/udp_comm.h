// The udp transport's comms: a sending or receiving half (udp_sender.h, udp_receiver.h) attached to the
// engine, requests from a pool, and the setup socket as the peer's liveness signal. Every call takes the
// engine's lock; the engine signals `ready` when a request completes, so a waiter sleeps in poll().
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "common/socket.h"
#include "transport/oob_link.h"
#include "transport/posted_receive.h"
#include "transport/request_pool.h"
#include "transport/transport.h"
#include "transport/udp/udp_engine.h"
#include "transport/udp/udp_receiver.h"
#include "transport/udp/udp_sender.h"

namespace megascale::transport {

/// An eventfd the engine signals when a comm's request completes or its connection fails.
class ReadySignal {
 public:
  ReadySignal();
  std::function<void()> notifier() const;
  void drain() const;
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
};

/// A connection half made and attached to the engine, with the signal its comm waits on. Members go in reverse:
/// the attachment first, so the engine never steps a half that is gone.
template <typename Half>
struct UdpEnd {
  std::shared_ptr<UdpEngine> engine;
  std::unique_ptr<ReadySignal> ready;
  std::unique_ptr<Half> half;
  std::unique_ptr<UdpAttachment> attachment;
};

class UdpSendComm : public SendComm {
 public:
  UdpSendComm(UdpEnd<UdpSender> end, OobLink link);
  Status isend(const void* data, size_t size, uint32_t tag, const MemoryRegion* mr, Request** request) override;
  Status test(Request* request, bool* done, size_t* size) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;

 private:
  struct Slot : Request {
    UdpOutgoing message;
    bool in_use = false;
  };
  SlotPool<Slot, kMaxRequests> pool_;  // the messages the sender points into: they outlive its attachment
  PeerWatch watch_;
  UdpEnd<UdpSender> end_;  // last: detached first
};

class UdpRecvComm : public RecvComm {
 public:
  UdpRecvComm(UdpEnd<UdpReceiver> end, OobLink link);
  Status irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags, const MemoryRegion* const* mrs,
               Request** request) override;
  Status test(Request* request, bool* done, size_t* sizes) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;
  uint64_t remoteId() const override { return watch_.link().remoteId(); }

 private:
  SlotPool<ReceiveSlot, kMaxRequests> pool_;  // the receives the receiver writes into: they outlive its attachment
  PeerWatch watch_;
  UdpEnd<UdpReceiver> end_;  // last: detached first
};

}  // namespace megascale::transport
