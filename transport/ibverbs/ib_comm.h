// ibverbs comms over an IbQpSet (ib_connection.h) with the CTS protocol of ib_wire.h. Everything moves in
// test(): it polls the completion queue, matches sends to the receiver's CTS entries by tag, and posts the
// writes. Buffers the caller did not register are registered for the operation and released at its end.
// Errors name the peer, the operation and the device; a retry-exceeded completion says how long the NIC tried.
#pragma once

#include <array>
#include <deque>
#include <memory>
#include <utility>
#include <vector>

#include "transport/ibverbs/ib_connection.h"
#include "transport/ibverbs/ib_flush.h"
#include "transport/ibverbs/ib_wire.h"
#include "transport/ibverbs/transfer_registration.h"
#include "transport/oob_link.h"
#include "transport/posted_receive.h"
#include "transport/transport.h"

namespace megascale::transport {

class IbSendComm : public SendComm {
 public:
  /// `eager_bytes`: the receiver's eager limit (QpSetInfo).
  IbSendComm(std::shared_ptr<IbQpSet> qps, OobLink link, size_t eager_bytes);
  ~IbSendComm() override;
  Status isend(const void* data, size_t size, uint32_t tag, const MemoryRegion* mr, Request** request) override;
  Status test(Request* request, bool* done, size_t* size) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;

 private:
  struct Slot : Request {
    int index = 0;
    bool in_use = false;
    bool posted = false;  // its writes or its SEND are out
    int outstanding = 0;  // signaled work requests not yet completed
    const uint8_t* data = nullptr;
    size_t size = 0;
    uint32_t tag = 0;
    TransferRegistration registration;
  };
  /// A message in the order both sides assign buffers: eager ones are already sent (slot -1 once done).
  struct Pending {
    int slot;
    uint32_t tag;
    bool eager;
  };
  struct Group {
    ib_wire::Cts cts;
    uint32_t filled = 0;  // bit per entry
  };

  Status progress();
  Status onCompletion(const ibv_wc& wc, int rail);
  Status match();
  Status postWrites(Slot& s, const Group& group, int entry);
  Status postEager(Slot& s);
  Status postCtsReceive(int index);
  Status failed(Status s);

  std::shared_ptr<IbQpSet> qps_;
  PeerWatch watch_;  // with kSendAckGrace: the NIC's last acknowledgement may trail the peer's close
  std::array<Slot, kMaxRequests> slots_;
  std::deque<Pending> pending_;  // every message not yet assigned a buffer, in isend order
  std::deque<Group> groups_;     // CTS received, oldest first
  size_t eager_bytes_;
  RegisteredArray<ib_wire::Cts, kMaxRequests> cts_ring_;
  RegisteredArray<uint64_t, kMaxRequests> size_staging_;
  RegisteredArray<std::array<uint8_t, ib_wire::kBounceBytes>, kMaxRequests> eager_staging_;
  Status error_;
};

class IbRecvComm : public RecvComm {
 public:
  IbRecvComm(std::shared_ptr<IbQpSet> qps, OobLink link);
  ~IbRecvComm() override;
  Status irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags, const MemoryRegion* const* mrs,
               Request** request) override;
  Status test(Request* request, bool* done, size_t* sizes) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;
  /// An RDMA READ of the last device-memory buffer that received bytes (IbFlush); null for host memory.
  Status iflush(int n, void* const* data, const size_t* sizes, const MemoryRegion* const* mrs,
                Request** request) override;
  uint64_t remoteId() const override { return watch_.link().remoteId(); }

 private:
  static constexpr int kBounces = 64;
  static constexpr size_t kMaxWaitingCts = 1024;
  struct Slot : Request {
    int index = 0;
    bool in_use = false;
    uint32_t assigned = 0;                      // bit per buffer: a message is on its way or here
    std::array<int, kMaxRecvs> parts{};         // write completions per buffer (a large message: one per QP)
    std::array<bool, kMaxRecvs> eager{};        // the buffer was filled by a SEND (its size is in posted.sizes)
    PostedReceive posted;
    std::array<TransferRegistration, kMaxRecvs> registrations;
  };
  struct Unexpected {
    uint32_t tag;
    std::vector<uint8_t> data;
  };

  Status progress();
  Status onCompletion(const ibv_wc& wc, int rail);
  /// A small message, in arrival order: into the next buffer, or kept until a receive is posted.
  Status deliverEager(uint32_t tag, const uint8_t* data, size_t size);
  Status fill(Slot& s, int entry, uint32_t tag, const uint8_t* data, size_t size);
  Status postBounce(int index);
  /// Posts waiting CTSs, oldest first, while fewer than kMaxRequests are unacknowledged.
  Status sendWaitingCts();
  Status postZeroReceive(int qp);
  bool complete(const Slot& s) const;
  Status failed(Status s);

  std::shared_ptr<IbQpSet> qps_;
  PeerWatch watch_;
  std::array<Slot, kMaxRequests> slots_;
  std::deque<int> posted_;  // slots in irecv order, until done
  // CTSs not yet acknowledged. At most kMaxRequests, the sender's CTS receives: more would meet receiver-not-
  // ready NAKs and fill the send queue (a stream of small messages posts receives faster than CTSs drain).
  // Those beyond wait here, in receive order.
  int cts_in_flight_ = 0;
  std::deque<ib_wire::Cts> waiting_cts_;
  int cts_posted_ = 0;  // every kCtsSignalEvery-th is signaled: its completion retires the ones before it
  std::deque<Unexpected> unexpected_;
  // A CTS buffer is reused only after its send completed: a receive can finish (its small messages came
  // eagerly) before its CTS has left, so CTSs rotate over twice as many buffers as may be in flight.
  RegisteredArray<ib_wire::Cts, 2 * kMaxRequests> cts_out_;
  RegisteredArray<std::array<uint64_t, kMaxRecvs>, kMaxRequests> sizes_;
  RegisteredArray<std::array<uint8_t, ib_wire::kBounceBytes>, kBounces> bounces_;
  std::unique_ptr<IbFlush> flush_;  // made at the first flush of device memory
  Status error_;
};

/// "ibverbs: <what> <peer> on <rail's device> (qp <n>): <status>" with, for a retry-exceeded completion, how long the
/// NIC retried and what would ride out longer.
Status completionError(const IbQpSet& qps, int rail, const ibv_wc& wc, const std::string& what,
                       const std::string& peer);

}  // namespace megascale::transport
