#include "transport/ibverbs/ib_comm.h"

#include <arpa/inet.h>

#include <cmath>
#include <cstring>

namespace megascale::transport {

namespace {

constexpr uint64_t kCtsReceive = uint64_t{1} << 40;  // wr_id of a CTS receive (| its ring index)
constexpr uint64_t kCtsSend = uint64_t{2} << 40;     // wr_id of a CTS send (| its slot)
constexpr uint64_t kZeroReceive = uint64_t{4} << 40;  // wr_id of a receive without a buffer (queue pairs 1..)
// CTSs are signaled in batches: a completion per CTS would wake a sleeping receiver when nothing can move.
constexpr int kCtsSignalEvery = 16;

const VerbsApi& api(const IbQpSet& q) { return q.device().api(); }

// 0, or the provider's error code.
int postSend(ibv_qp* qp, ibv_send_wr* wr) {
  ibv_send_wr* bad = nullptr;
  return qp->context->ops.post_send(qp, wr, &bad);
}

int postRecv(ibv_qp* qp, ibv_recv_wr* wr) {
  ibv_recv_wr* bad = nullptr;
  return qp->context->ops.post_recv(qp, wr, &bad);
}

Status postFailed(int rc, const std::string& what, const std::string& peer) {
  return Status(ErrorCode::kSystem, "ibverbs: " + what + " " + peer + " failed: " + errnoText(rc));
}

// The first request slot not in use, or null when all are.
template <typename Slot, size_t N>
Slot* freeSlot(std::array<Slot, N>& slots) {
  for (Slot& s : slots) {
    if (!s.in_use) return &s;
  }
  return nullptr;
}

// The first error stays the comm's answer; it also stops the queue pairs (see IbQpSet::stopTraffic).
Status keepFirstError(IbQpSet& qps, Status& error, Status s) {
  if (error.isOk()) {
    error = std::move(s);
    qps.stopTraffic();
  }
  return error;
}

}  // namespace

Status completionError(const IbQpSet& qps, int rail, const ibv_wc& wc, const std::string& what,
                       const std::string& peer) {
  std::string text = "ibverbs: " + what + " " + peer + " on " + qps.device(rail).name() + " (qp " +
                     std::to_string(wc.qp_num) + "): " + api(qps).wc_status_str(wc.status) + " (vendor error " +
                     std::to_string(wc.vendor_err) + ")";
  if (wc.status == IBV_WC_RETRY_EXC_ERR) {
    const IbQpSettings& s = qps.settings();
    const double seconds = (s.retry_cnt + 1) * 4.096e-6 * std::ldexp(1.0, s.timeout);
    char detail[256];
    std::snprintf(detail, sizeof(detail),
                  "; the NIC retried for %.3g s (%d tries of 4.096 us x 2^%d: MEGASCALE_IB_RETRY_CNT=%d, "
                  "MEGASCALE_IB_TIMEOUT=%d) and the peer never answered; raise MEGASCALE_IB_TIMEOUT to ride out "
                  "longer link flaps",
                  seconds, s.retry_cnt + 1, s.timeout, s.retry_cnt, s.timeout);
    text += detail;
  }
  return Status(ErrorCode::kPeerLost, text);
}

// ---------------------------------------------------------------------------------------------------------
// Send side.

IbSendComm::IbSendComm(std::shared_ptr<IbQpSet> qps, OobLink link, size_t eager_bytes)
    : qps_(std::move(qps)), watch_(std::move(link), kSendAckGrace), eager_bytes_(eager_bytes) {
  for (int i = 0; i < kMaxRequests; ++i) slots_[static_cast<size_t>(i)].index = i;
  cts_ring_.registerOn(qps_->device());
  size_staging_.registerOn(qps_->device());
  eager_staging_.registerOn(qps_->device());
  for (int i = 0; i < kMaxRequests; ++i) {
    Status s = postCtsReceive(i);
    if (!s.isOk()) throw Error(s.code(), s.message());
  }
}

IbSendComm::~IbSendComm() { qps_.reset(); }  // queue pairs first: no DMA after the buffers' registrations go

Status IbSendComm::postCtsReceive(int index) {
  ibv_sge sge{reinterpret_cast<uint64_t>(&cts_ring_.items[static_cast<size_t>(index)]), sizeof(ib_wire::Cts),
              cts_ring_.registration.mr()->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = kCtsReceive | static_cast<uint64_t>(index);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (int rc = postRecv(qps_->qp(0), &wr)) return postFailed(rc, "posting a CTS receive for", watch_.link().peer());
  return Status::ok();
}

Status IbSendComm::failed(Status s) { return keepFirstError(*qps_, error_, std::move(s)); }

Status IbSendComm::isend(const void* data, size_t size, uint32_t tag, const MemoryRegion* mr, Request** request) {
  *request = nullptr;
  if (!error_.isOk()) return error_;
  Slot* slot = freeSlot(slots_);
  if (slot == nullptr) return Status::ok();
  slot->posted = false;
  slot->outstanding = 0;
  slot->data = static_cast<const uint8_t*>(data);
  slot->size = size;
  slot->tag = tag;
  // Small, from host memory (no CPU copy may read device memory), and nothing before it waits for a CTS: it
  // leaves now, so a receive posted later finds it there.
  bool all_eager = true;
  for (const Pending& p : pending_) all_eager = all_eager && p.eager;
  const bool device_memory = mr != nullptr && mr->kind == kDevicePointer && size > 0;
  if (size <= eager_bytes_ && all_eager && !device_memory) {
    MSC_RETURN_IF_ERROR(postEager(*slot));
    pending_.push_back(Pending{slot->index, tag, true});
  } else {
    if (size > 0) {
      MSC_RETURN_IF_ERROR(TransferRegistration::make(qps_->devices(), const_cast<void*>(data), size, mr,
                                                     &slot->registration));
    }
    pending_.push_back(Pending{slot->index, tag, false});
  }
  slot->in_use = true;
  *request = slot;
  return progress();
}

Status IbSendComm::postEager(Slot& s) {
  auto& staging = eager_staging_.items[static_cast<size_t>(s.index)];
  const ib_wire::EagerHeader header{s.tag, static_cast<uint32_t>(s.size)};
  std::memcpy(staging.data(), &header, sizeof(header));
  if (s.size > 0) std::memcpy(staging.data() + sizeof(header), s.data, s.size);
  ibv_sge sge{reinterpret_cast<uint64_t>(staging.data()), static_cast<uint32_t>(sizeof(header) + s.size),
              eager_staging_.registration.mr()->lkey};
  ibv_send_wr wr{};
  wr.wr_id = static_cast<uint64_t>(s.index) << 8;
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (int rc = postSend(qps_->qp(0), &wr)) return failed(postFailed(rc, "posting a send to", watch_.link().peer()));
  s.outstanding = 1;
  s.posted = true;
  return Status::ok();
}

Status IbSendComm::test(Request* request, bool* done, size_t* size) {
  auto* slot = static_cast<Slot*>(request);
  *done = false;
  MSC_RETURN_IF_ERROR(progress());
  if (slot->posted && slot->outstanding == 0) {
    *done = true;
    if (size != nullptr) *size = slot->size;
    slot->registration.reset();
    slot->in_use = false;
    return Status::ok();
  }
  if (!watch_.alive()) return failed(watch_.lost("ibverbs: send to"));  // after its grace for a late acknowledgement
  return Status::ok();
}

Status IbSendComm::progress() {
  if (!error_.isOk()) return error_;
  ibv_wc wc[16];
  int n, rail;
  while ((n = qps_->poll(16, wc, &rail)) > 0) {
    for (int i = 0; i < n; ++i) MSC_RETURN_IF_ERROR(onCompletion(wc[i], rail));
  }
  if (n < 0) return failed(Status(ErrorCode::kSystem, "ibverbs: polling the completion queue failed"));
  return match();
}

Status IbSendComm::onCompletion(const ibv_wc& wc, int rail) {
  if (wc.status != IBV_WC_SUCCESS) {
    const bool cts = (wc.wr_id & kCtsReceive) != 0;
    return failed(completionError(*qps_, rail, wc, cts ? "waiting for a clear-to-send from" : "RDMA write to",
                                  watch_.link().peer()));
  }
  if (wc.wr_id & kCtsReceive) {
    const int index = static_cast<int>(wc.wr_id & 0xffff);
    Group g{cts_ring_.items[static_cast<size_t>(index)], 0};
    if (wc.byte_len != sizeof(ib_wire::Cts) || g.cts.count < 1 || g.cts.count > static_cast<uint32_t>(kMaxRecvs)) {
      return failed(Status(ErrorCode::kPeerLost, "ibverbs: a malformed clear-to-send from " + watch_.link().peer()));
    }
    groups_.push_back(g);
    return postCtsReceive(index);
  }
  Slot& s = slots_[static_cast<size_t>((wc.wr_id >> 8) & 0xff)];
  if (s.outstanding > 0) --s.outstanding;
  return Status::ok();
}

// Messages take buffers in order, each the first unassigned buffer with its tag in the oldest receive that has
// one (tag matching, as tcp and shm do it). A message that no known receive takes waits for the next CTS, and
// so does everything behind it: both sides assign in message order.
Status IbSendComm::match() {
  while (!pending_.empty()) {
    const Pending p = pending_.front();
    Group* group = nullptr;
    int entry = -1;
    for (Group& g : groups_) {
      for (uint32_t e = 0; e < g.cts.count && entry < 0; ++e) {
        if (!(g.filled & (1u << e)) && g.cts.entries[e].tag == p.tag) entry = static_cast<int>(e);
      }
      if (entry >= 0) {
        group = &g;
        break;
      }
    }
    if (group == nullptr) return Status::ok();
    if (!p.eager) MSC_RETURN_IF_ERROR(postWrites(slots_[static_cast<size_t>(p.slot)], *group, entry));
    group->filled |= 1u << entry;
    pending_.pop_front();
    while (!groups_.empty() && groups_.front().filled == (1u << groups_.front().cts.count) - 1) groups_.pop_front();
  }
  return Status::ok();
}

Status IbSendComm::postWrites(Slot& s, const Group& g, int entry) {
  const ib_wire::CtsEntry& target = g.cts.entries[entry];
  const bool too_large = s.size > target.capacity;
  const int n = qps_->size();
  // The size first, on queue pair 0, so it has landed when that queue pair's part completes.
  size_staging_.items[static_cast<size_t>(s.index)] = s.size;
  ibv_sge size_sge{reinterpret_cast<uint64_t>(&size_staging_.items[static_cast<size_t>(s.index)]), sizeof(uint64_t),
                   size_staging_.registration.mr()->lkey};
  ibv_send_wr size_wr{};
  size_wr.opcode = IBV_WR_RDMA_WRITE;
  size_wr.sg_list = &size_sge;
  size_wr.num_sge = 1;
  size_wr.wr.rdma.remote_addr = g.cts.sizes_addr + static_cast<uint64_t>(entry) * sizeof(uint64_t);
  size_wr.wr.rdma.rkey = g.cts.sizes_rkey;
  if (int rc = postSend(qps_->qp(0), &size_wr)) {
    return failed(postFailed(rc, "posting a write to", watch_.link().peer()));
  }
  const uint64_t total = too_large ? 0 : s.size;
  const uint32_t imm = (g.cts.slot << ib_wire::kSlotShift) | static_cast<uint32_t>(entry) |
                       (too_large ? ib_wire::kTooLarge : 0);
  for (int q = 0; q < n; ++q) {
    uint64_t begin = total * static_cast<uint64_t>(q) / static_cast<uint64_t>(n);
    const uint64_t end = total * static_cast<uint64_t>(q + 1) / static_cast<uint64_t>(n);
    while (true) {
      const uint64_t chunk = std::min(end - begin, ib_wire::kMaxWriteBytes);
      const bool last = begin + chunk == end;
      ibv_sge sge{reinterpret_cast<uint64_t>(s.data) + begin, static_cast<uint32_t>(chunk),
                  chunk > 0 ? s.registration.mr(qps_->railOf(q))->lkey : 0};
      ibv_send_wr wr{};
      wr.opcode = last ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
      wr.sg_list = chunk > 0 ? &sge : nullptr;
      wr.num_sge = chunk > 0 ? 1 : 0;
      wr.wr.rdma.remote_addr = target.addr + begin;
      wr.wr.rdma.rkey = target.rkey[qps_->remoteRailOf(q)];
      if (last) {
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.wr_id = (static_cast<uint64_t>(s.index) << 8) | static_cast<uint64_t>(q);
        wr.imm_data = htonl(imm);
      }
      if (int rc = postSend(qps_->qp(q), &wr)) return failed(postFailed(rc, "posting a write to", watch_.link().peer()));
      begin += chunk;
      if (last) break;
    }
  }
  s.outstanding = n;
  s.posted = true;
  return Status::ok();
}

bool IbSendComm::appendReadiness(std::vector<pollfd>& fds) const {
  bool pending = false;
  for (const Slot& s : slots_) pending = pending || s.in_use;
  if (!pending || !error_.isOk()) return true;  // nothing to wait for (an error returns at once from test())
  qps_->appendReadiness(fds);
  fds.push_back(pollfd{watch_.link().fd(), POLLIN, 0});
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Receive side.

IbRecvComm::IbRecvComm(std::shared_ptr<IbQpSet> qps, OobLink link) : qps_(std::move(qps)), watch_(std::move(link)) {
  for (int i = 0; i < kMaxRequests; ++i) slots_[static_cast<size_t>(i)].index = i;
  cts_out_.registerOn(qps_->device());
  sizes_.registerOn(qps_->device());
  bounces_.registerOn(qps_->device());
  Status s;
  for (int i = 0; i < kBounces && s.isOk(); ++i) s = postBounce(i);
  for (int q = 1; q < qps_->size() && s.isOk(); ++q) {
    for (int i = 0; i < kMaxRequests * kMaxRecvs && s.isOk(); ++i) s = postZeroReceive(q);
  }
  if (!s.isOk()) throw Error(s.code(), s.message());
}

IbRecvComm::~IbRecvComm() { qps_.reset(); }

Status IbRecvComm::failed(Status s) { return keepFirstError(*qps_, error_, std::move(s)); }

// Queue pair 0's receives land SENDs (small messages) in bounce buffers; a write with immediate takes one too.
Status IbRecvComm::postBounce(int index) {
  ibv_sge sge{reinterpret_cast<uint64_t>(bounces_.items[static_cast<size_t>(index)].data()), ib_wire::kBounceBytes,
              bounces_.registration.mr()->lkey};
  ibv_recv_wr wr{};
  wr.wr_id = static_cast<uint64_t>(index);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (int rc = postRecv(qps_->qp(0), &wr)) return postFailed(rc, "posting a receive for", watch_.link().peer());
  return Status::ok();
}

// The other queue pairs only ever take writes with immediate: receives without a buffer.
Status IbRecvComm::postZeroReceive(int qp) {
  ibv_recv_wr wr{};
  wr.wr_id = kZeroReceive | static_cast<uint64_t>(qp);
  if (int rc = postRecv(qps_->qp(qp), &wr)) return postFailed(rc, "posting a receive for", watch_.link().peer());
  return Status::ok();
}

Status IbRecvComm::irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags,
                         const MemoryRegion* const* mrs, Request** request) {
  *request = nullptr;
  if (!error_.isOk()) return error_;
  if (waiting_cts_.size() >= kMaxWaitingCts) MSC_RETURN_IF_ERROR(progress());
  if (waiting_cts_.size() >= kMaxWaitingCts) return Status::ok();  // the caller retries after test()
  Slot* slot = freeSlot(slots_);
  if (slot == nullptr) return Status::ok();
  MSC_RETURN_IF_ERROR(slot->posted.post(n, data, sizes, tags));
  ib_wire::Cts cts{};
  cts.slot = static_cast<uint32_t>(slot->index);
  cts.count = static_cast<uint32_t>(n);
  cts.sizes_addr = reinterpret_cast<uint64_t>(sizes_.items[static_cast<size_t>(slot->index)].data());
  cts.sizes_rkey = sizes_.registration.mr()->rkey;
  for (int i = 0; i < n; ++i) {
    auto& registration = slot->registrations[static_cast<size_t>(i)];
    registration.reset();
    if (sizes[i] > 0) {
      MSC_RETURN_IF_ERROR(TransferRegistration::make(qps_->devices(), data[i], sizes[i], mrs ? mrs[i] : nullptr,
                                                     &registration));
    }
    ib_wire::CtsEntry& entry = cts.entries[i];
    entry.addr = reinterpret_cast<uint64_t>(data[i]);
    entry.capacity = sizes[i];
    entry.tag = tags[i];
    for (int r = 0; r < qps_->railCount() && sizes[i] > 0; ++r) entry.rkey[r] = registration.mr(r)->rkey;
  }
  slot->assigned = 0;
  slot->parts.fill(0);
  slot->eager.fill(false);
  slot->in_use = true;
  posted_.push_back(slot->index);
  // Small messages that came first (no earlier receive had a buffer with their tag) take this one's buffers,
  // in arrival order, as the sender will assume when this CTS reaches it.
  for (auto it = unexpected_.begin(); it != unexpected_.end() && slot->assigned != (1u << n) - 1;) {
    int entry = -1;
    for (int e = 0; e < n && entry < 0; ++e) {
      if (!(slot->assigned & (1u << e)) && tags[e] == it->tag) entry = e;
    }
    if (entry < 0) {
      ++it;
      continue;
    }
    MSC_RETURN_IF_ERROR(fill(*slot, entry, it->tag, it->data.data(), it->data.size()));
    it = unexpected_.erase(it);
  }
  // The CTS leaves now, or once earlier ones drain: a receive whose messages all came eagerly completes without
  // waiting for the sender to take CTSs (a sender done with its sends may not drive its comm for a while).
  waiting_cts_.push_back(cts);
  *request = slot;
  return sendWaitingCts();
}

Status IbRecvComm::sendWaitingCts() {
  while (!waiting_cts_.empty() && cts_in_flight_ < kMaxRequests) {
    ib_wire::Cts& cts = cts_out_.items[static_cast<size_t>(cts_posted_ % (2 * kMaxRequests))];
    cts = waiting_cts_.front();
    ibv_sge sge{reinterpret_cast<uint64_t>(&cts), sizeof(cts), cts_out_.registration.mr()->lkey};
    ibv_send_wr wr{};
    wr.wr_id = kCtsSend | static_cast<uint64_t>(cts.slot);
    wr.opcode = IBV_WR_SEND;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = (cts_posted_ + 1) % kCtsSignalEvery == 0 ? IBV_SEND_SIGNALED : 0;
    if (int rc = postSend(qps_->qp(0), &wr)) {
      return failed(postFailed(rc, "sending a clear-to-send to", watch_.link().peer()));
    }
    waiting_cts_.pop_front();
    ++cts_in_flight_;
    ++cts_posted_;
  }
  return Status::ok();
}

Status IbRecvComm::fill(Slot& s, int entry, uint32_t tag, const uint8_t* data, size_t size) {
  if (size > s.posted.capacity[entry]) {
    return failed(Status(ErrorCode::kMismatch, "ibverbs: a message of " + std::to_string(size) + " bytes from " +
                                                   watch_.link().peer() + " for a buffer of " +
                                                   std::to_string(s.posted.capacity[entry]) + " bytes (tag " +
                                                   std::to_string(tag) + ")"));
  }
  if (size > 0 && s.registrations[static_cast<size_t>(entry)].deviceMemory()) {
    return failed(Status(ErrorCode::kMismatch, "ibverbs: " + watch_.link().peer() + " sent " + std::to_string(size) +
                                                   " bytes eagerly for a buffer in device memory, which no CPU copy "
                                                   "may fill (tag " + std::to_string(tag) + ")"));
  }
  if (size > 0) std::memcpy(s.posted.data[entry], data, size);
  s.posted.sizes[entry] = size;
  s.eager[static_cast<size_t>(entry)] = true;
  s.assigned |= 1u << entry;
  return Status::ok();
}

Status IbRecvComm::deliverEager(uint32_t tag, const uint8_t* data, size_t size) {
  for (int index : posted_) {
    Slot& s = slots_[static_cast<size_t>(index)];
    for (int e = 0; e < s.posted.n; ++e) {
      if (!(s.assigned & (1u << e)) && s.posted.tags[e] == tag) return fill(s, e, tag, data, size);
    }
  }
  unexpected_.push_back(Unexpected{tag, std::vector<uint8_t>(data, data + size)});
  return Status::ok();
}

Status IbRecvComm::onCompletion(const ibv_wc& wc, int rail) {
  if (wc.status != IBV_WC_SUCCESS) {
    const bool cts = (wc.wr_id & kCtsSend) != 0;
    return failed(completionError(*qps_, rail, wc, cts ? "clear-to-send to" : "receive from", watch_.link().peer()));
  }
  if (wc.wr_id & kCtsSend) {
    cts_in_flight_ -= kCtsSignalEvery;
    return Status::ok();
  }
  // A receive was consumed: put it back first (bounce buffers are copied out below, before anything reuses them).
  const bool bounce = (wc.wr_id & kZeroReceive) == 0;
  if (wc.opcode == IBV_WC_RECV) {
    if (!bounce || wc.byte_len < sizeof(ib_wire::EagerHeader)) {
      return failed(Status(ErrorCode::kPeerLost, "ibverbs: a malformed message from " + watch_.link().peer()));
    }
    const uint8_t* buffer = bounces_.items[static_cast<size_t>(wc.wr_id)].data();
    ib_wire::EagerHeader header;
    std::memcpy(&header, buffer, sizeof(header));
    if (header.size != wc.byte_len - sizeof(header)) {
      return failed(Status(ErrorCode::kPeerLost, "ibverbs: a message from " + watch_.link().peer() + " says " +
                                                     std::to_string(header.size) + " bytes and carries " +
                                                     std::to_string(wc.byte_len - sizeof(header))));
    }
    MSC_RETURN_IF_ERROR(deliverEager(header.tag, buffer + sizeof(header), header.size));
    return postBounce(static_cast<int>(wc.wr_id));
  }
  const uint32_t imm = ntohl(wc.imm_data);
  const uint32_t index = imm >> ib_wire::kSlotShift, entry = imm & ib_wire::kEntryMask;
  Slot* s = index < static_cast<uint32_t>(kMaxRequests) ? &slots_[index] : nullptr;
  if (s == nullptr || !s->in_use || entry >= static_cast<uint32_t>(s->posted.n)) {
    return failed(Status(ErrorCode::kPeerLost, "ibverbs: a write from " + watch_.link().peer() +
                                                   " names no posted buffer (receive " + std::to_string(index) +
                                                   ", buffer " + std::to_string(entry) + ")"));
  }
  s->assigned |= 1u << entry;
  ++s->parts[entry];
  if (bounce) return postBounce(static_cast<int>(wc.wr_id));
  return postZeroReceive(static_cast<int>(wc.wr_id & 0xff));  // the queue pair that took the receive
}

Status IbRecvComm::progress() {
  if (!error_.isOk()) return error_;
  ibv_wc wc[16];
  int n, rail;
  while ((n = qps_->poll(16, wc, &rail)) > 0) {
    for (int i = 0; i < n; ++i) MSC_RETURN_IF_ERROR(onCompletion(wc[i], rail));
  }
  if (n < 0) return failed(Status(ErrorCode::kSystem, "ibverbs: polling the completion queue failed"));
  return sendWaitingCts();
}

bool IbRecvComm::appendReadiness(std::vector<pollfd>& fds) const {
  if (posted_.empty() || !error_.isOk()) return true;
  qps_->appendReadiness(fds);
  fds.push_back(pollfd{watch_.link().fd(), POLLIN, 0});
  return true;
}

bool IbRecvComm::complete(const Slot& s) const {
  for (int e = 0; e < s.posted.n; ++e) {
    if (!s.eager[static_cast<size_t>(e)] && s.parts[static_cast<size_t>(e)] < qps_->size()) return false;
  }
  return true;
}

Status IbRecvComm::iflush(int n, void* const* data, const size_t* sizes, const MemoryRegion* const* mrs,
                          Request** request) {
  *request = nullptr;
  if (!error_.isOk()) return error_;
  int last = -1;
  for (int i = 0; i < n && mrs != nullptr; ++i) {
    if (sizes[i] > 0 && mrs[i] != nullptr && mrs[i]->kind == kDevicePointer && mrs[i]->handle != nullptr) last = i;
  }
  if (last < 0) return Status::ok();  // host memory: the CPU sees what the NIC wrote once the write completed
  if (flush_ == nullptr) {
    try {
      flush_ = std::make_unique<IbFlush>(qps_->devices(), qps_->settings(), watch_.link().peer());
    } catch (const Error& e) {
      return failed(Status(e.code(), e.what()));
    }
  }
  return flush_->post(data[last], *static_cast<const IbRegistration*>(mrs[last]->handle), request);
}

Status IbRecvComm::test(Request* request, bool* done, size_t* sizes) {
  if (flush_ != nullptr && flush_->owns(request)) {
    Status s = flush_->test(request, done);
    return s.isOk() ? s : failed(s);
  }
  auto* slot = static_cast<Slot*>(request);
  *done = false;
  MSC_RETURN_IF_ERROR(progress());
  if (!complete(*slot)) {
    if (!watch_.alive()) return failed(watch_.lost("ibverbs: receive from"));
    return Status::ok();
  }
  const auto& written = sizes_.items[static_cast<size_t>(slot->index)];
  for (int i = 0; i < slot->posted.n; ++i) {
    if (slot->eager[static_cast<size_t>(i)]) continue;
    const uint64_t size = written[static_cast<size_t>(i)];
    if (size > slot->posted.capacity[i]) {
      return failed(Status(ErrorCode::kMismatch, "ibverbs: a message of " + std::to_string(size) + " bytes from " +
                                                     watch_.link().peer() + " for a buffer of " +
                                                     std::to_string(slot->posted.capacity[i]) + " bytes (tag " +
                                                     std::to_string(slot->posted.tags[i]) + ")"));
    }
    slot->posted.sizes[i] = size;
  }
  for (auto& r : slot->registrations) r.reset();
  *done = true;
  if (sizes != nullptr) slot->posted.copySizes(sizes);
  slot->in_use = false;
  for (auto it = posted_.begin(); it != posted_.end(); ++it) {
    if (*it == slot->index) {
      posted_.erase(it);
      break;
    }
  }
  return Status::ok();
}

}  // namespace megascale::transport
