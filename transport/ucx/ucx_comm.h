// UCX comms: tagged messages on a worker shared by every comm of the transport. The UCP tag is the connection
// id the receiving side gave (high half) and the caller's tag (low half); large messages go by UCX's
// rendezvous protocol, and test() drives the worker. A lost peer fails the comm's requests with kPeerLost
// naming it: the setup socket's close tells both sides (a receive waits on the worker, not on an endpoint, and
// shared memory cannot report a failure to UCX). A waiter sleeps on the worker's event descriptor and the setup
// socket.
#pragma once

#include <memory>

#include "common/socket.h"
#include "transport/oob_link.h"
#include "transport/posted_receive.h"
#include "transport/request_pool.h"
#include "transport/transport.h"
#include "transport/ucx/ucx_endpoint.h"

namespace megascale::transport {

inline ucp_tag_t ucxTag(uint32_t connection_id, uint32_t tag) {
  return (static_cast<ucp_tag_t>(connection_id) << 32) | tag;
}

class UcxSendComm : public SendComm {
 public:
  UcxSendComm(std::unique_ptr<UcxEndpoint> endpoint, uint32_t connection_id, OobLink link)
      : endpoint_(std::move(endpoint)), connection_id_(connection_id), watch_(std::move(link), kSendAckGrace) {}
  ~UcxSendComm() override;
  Status isend(const void* data, size_t size, uint32_t tag, const MemoryRegion* mr, Request** request) override;
  Status test(Request* request, bool* done, size_t* size) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;

 private:
  struct Slot : Request {
    void* ucx = nullptr;  // null once complete
    size_t size = 0;
    uint32_t tag = 0;
    bool in_use = false;
  };
  std::unique_ptr<UcxEndpoint> endpoint_;
  uint32_t connection_id_;
  PeerWatch watch_;
  SlotPool<Slot, kMaxRequests> slots_;
};

class UcxRecvComm : public RecvComm {
 public:
  UcxRecvComm(std::shared_ptr<UcxWorker> worker, uint32_t connection_id, OobLink link)
      : worker_(std::move(worker)), connection_id_(connection_id), watch_(std::move(link)) {}
  /// Cancels receives still posted: UCX must not write into buffers the caller is about to free.
  ~UcxRecvComm() override;
  Status irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags, const MemoryRegion* const* mrs,
               Request** request) override;
  Status test(Request* request, bool* done, size_t* sizes) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;
  uint64_t remoteId() const override { return watch_.link().remoteId(); }

 private:
  struct Slot : ReceiveSlot {
    void* ucx[kMaxRecvs] = {};  // each buffer's receive, null once complete
  };
  /// Records buffer i's completion (or its error) from UCX's status and tag info.
  Status finish(Slot& slot, int i, ucs_status_t status, const ucp_tag_recv_info_t& info);
  void cancel(Slot& slot);

  std::shared_ptr<UcxWorker> worker_;
  uint32_t connection_id_;
  PeerWatch watch_;
  SlotPool<Slot, kMaxRequests> slots_;
};

}  // namespace megascale::transport
