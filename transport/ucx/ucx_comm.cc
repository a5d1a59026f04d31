#include "transport/ucx/ucx_comm.h"

#include "common/backoff.h"

namespace megascale::transport {

namespace {

std::string sendWhat(size_t size, uint32_t tag) {
  return "send of " + std::to_string(size) + " bytes (tag " + std::to_string(tag) + ") to";
}

constexpr int kProgressTurnsPerTest = 8;

// What a waiter on a comm polls: the worker's descriptor, or one readable at once when the worker has work or
// `any_done` finds a request already complete; and the setup socket, whose close is how a lost peer shows.
//
// Offered only on a crowded host (more ranks than cores), where it pays: there a nap costs milliseconds (2 hosts x
// 2 ranks on 2 cores: 4.2 ms per 8 B all-reduce napping, 0.16 ms sleeping here). With cores to spare the waiter
// naps: sleeping until UCX's next event cost all-reduces over a 1 Gbit/s link a third of their bandwidth (2 MiB:
// 27 against 18 ms), since a rendezvous step waits for a later progress call rather than an event (eager-only
// ran at the link's rate). docs/performance.md has the runs.
template <typename AnyDone>
bool appendWorkerAndLink(UcxWorker& worker, const OobLink& link, AnyDone&& any_done, std::vector<pollfd>& fds) {
  if (!oversubscribedHost().load(std::memory_order_relaxed)) return false;
  std::lock_guard<SpinLock> guard(worker.lock());
  const UcxWorker::Arming arming = worker.arm();
  if (arming == UcxWorker::Arming::kNoDescriptor) return false;
  const bool sleep = arming == UcxWorker::Arming::kArmed && !any_done();
  fds.push_back(pollfd{sleep ? worker.eventFd() : worker.wakeFd(), POLLIN, 0});
  fds.push_back(pollfd{link.fd(), POLLIN, 0});
  return true;
}

}  // namespace

UcxSendComm::~UcxSendComm() {
  if (watch_.link().peerGone()) endpoint_->peerGone();
  std::lock_guard<SpinLock> guard(endpoint_->worker().lock());
  // The caller no longer waits for these; UCX frees each when it completes (the close below flushes them).
  slots_.forEachInUse([](Slot& slot) {
    if (slot.ucx != nullptr) ucx().request_free(slot.ucx);
  });
}

Status UcxSendComm::isend(const void* data, size_t size, uint32_t tag, const MemoryRegion*, Request** request) {
  *request = nullptr;
  std::lock_guard<SpinLock> guard(endpoint_->worker().lock());
  Slot* slot = slots_.free();
  if (slot == nullptr) return Status::ok();
  ucp_request_param_t param{};
  ucs_status_ptr_t r = ucx().tag_send_nbx(endpoint_->ep(), data, size, ucxTag(connection_id_, tag), &param);
  if (UCS_PTR_IS_ERR(r)) {
    return Status(ErrorCode::kPeerLost, ucxError("ucx: " + sendWhat(size, tag) + " " + endpoint_->peer(),
                                                 UCS_PTR_STATUS(r)));
  }
  slot->ucx = r;  // null: it left at once
  slot->size = size;
  slot->tag = tag;
  slot->in_use = true;
  *request = slot;
  return Status::ok();
}

Status UcxSendComm::test(Request* request, bool* done, size_t* size) {
  auto* slot = static_cast<Slot*>(request);
  *done = false;
  if (slot->ucx != nullptr) {  // else it left when posted: no call into UCX, no lock
    std::lock_guard<SpinLock> guard(endpoint_->worker().lock());
    ucx().worker_progress(endpoint_->worker().worker());
    ucs_status_t s = ucx().request_check_status(slot->ucx);
    if (s == UCS_INPROGRESS) {
      if (watch_.alive()) return Status::ok();
      slot->in_use = false;  // the request stays with UCX, freed at the close
      return watch_.lost("ucx: " + sendWhat(slot->size, slot->tag));
    }
    ucx().request_free(slot->ucx);
    slot->ucx = nullptr;
    if (s != UCS_OK) {
      slot->in_use = false;
      return Status(ErrorCode::kPeerLost, ucxError("ucx: " + sendWhat(slot->size, slot->tag) + " " + endpoint_->peer(), s));
    }
  }
  *done = true;
  if (size != nullptr) *size = slot->size;
  slot->in_use = false;
  return Status::ok();
}

bool UcxSendComm::appendReadiness(std::vector<pollfd>& fds) const {
  if (!slots_.anyInUse()) return true;
  return appendWorkerAndLink(endpoint_->worker(), watch_.link(), [this] {
    return slots_.anyInUse([](const Slot& s) {
      return s.ucx == nullptr || ucx().request_check_status(s.ucx) != UCS_INPROGRESS;
    });
  }, fds);
}

UcxRecvComm::~UcxRecvComm() {
  std::lock_guard<SpinLock> guard(worker_->lock());
  slots_.forEachInUse([this](Slot& slot) { cancel(slot); });
}

void UcxRecvComm::cancel(Slot& slot) {
  for (int i = 0; i < slot.posted.n; ++i) {
    if (slot.ucx[i] == nullptr) continue;
    ucx().request_cancel(worker_->worker(), slot.ucx[i]);
    ucx().request_free(slot.ucx[i]);
    slot.ucx[i] = nullptr;
  }
  slot.in_use = false;
}

Status UcxRecvComm::irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags, const MemoryRegion* const*,
                          Request** request) {
  *request = nullptr;
  std::lock_guard<SpinLock> guard(worker_->lock());
  ReceiveSlot* claimed = nullptr;
  MSC_RETURN_IF_ERROR(claimReceiveSlot(slots_, n, data, sizes, tags, &claimed));
  if (claimed == nullptr) return Status::ok();
  auto* slot = static_cast<Slot*>(claimed);
  Status result;
  for (int i = 0; i < n; ++i) {
    // Always a request, even for a message already here: its size then comes from ucp_tag_recv_request_test,
    // the one place UCX reports it for every path (eager, unexpected, rendezvous).
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    ucs_status_ptr_t r = ucx().tag_recv_nbx(worker_->worker(), data[i], sizes[i], ucxTag(connection_id_, tags[i]),
                                          ~ucp_tag_t{0}, &param);
    slot->ucx[i] = UCS_PTR_IS_PTR(r) ? r : nullptr;
    slot->posted.matched[i] = false;
    if (UCS_PTR_IS_ERR(r) && result.isOk()) result = finish(*slot, i, UCS_PTR_STATUS(r), ucp_tag_recv_info_t{});
  }
  if (!result.isOk()) {
    cancel(*slot);
    return result;
  }
  *request = slot;
  return Status::ok();
}

Status UcxRecvComm::finish(Slot& slot, int i, ucs_status_t status, const ucp_tag_recv_info_t& info) {
  if (status == UCS_OK) {
    slot.posted.sizes[i] = info.length;
    slot.posted.matched[i] = true;
    return Status::ok();
  }
  const std::string what = "receive into a buffer of " + std::to_string(slot.posted.capacity[i]) + " bytes (tag " +
                           std::to_string(slot.posted.tags[i]) + ") from " + watch_.link().peer();
  if (status == UCS_ERR_MESSAGE_TRUNCATED) {
    return Status(ErrorCode::kMismatch, "ucx: " + what + ": the message of " + std::to_string(info.length) +
                                            " bytes does not fit");
  }
  return Status(ErrorCode::kPeerLost, ucxError("ucx: " + what, status));
}

Status UcxRecvComm::test(Request* request, bool* done, size_t* sizes) {
  auto* slot = static_cast<Slot*>(request);
  *done = false;
  std::lock_guard<SpinLock> guard(worker_->lock());
  for (int i = 0; i < slot->posted.n; ++i) {
    if (slot->ucx[i] != nullptr) {
      ucp_tag_recv_info_t info{};
      ucs_status_t s = UCS_INPROGRESS;
      // A few turns of progress per call: a message that lands meanwhile is seen a caller's loop sooner.
      for (int turn = 0; turn < kProgressTurnsPerTest && s == UCS_INPROGRESS; ++turn) {
        ucx().worker_progress(worker_->worker());
        s = ucx().tag_recv_request_test(slot->ucx[i], &info);
      }
      if (s == UCS_INPROGRESS) {
        // Receives wait on the worker, not the endpoint: a dead peer's never complete by themselves.
        if (watch_.alive()) return Status::ok();
        cancel(*slot);
        return watch_.lost("ucx: receive from");
      }
      ucx().request_free(slot->ucx[i]);
      slot->ucx[i] = nullptr;
      Status result = finish(*slot, i, s, info);
      if (!result.isOk()) {
        cancel(*slot);
        return result;
      }
    }
  }
  *done = true;
  if (sizes != nullptr) slot->posted.copySizes(sizes);
  slot->in_use = false;
  return Status::ok();
}

bool UcxRecvComm::appendReadiness(std::vector<pollfd>& fds) const {
  if (!slots_.anyInUse()) return true;
  return appendWorkerAndLink(*worker_, watch_.link(), [this] {
    return slots_.anyInUse([](const Slot& s) {
      for (int i = 0; i < s.posted.n; ++i) {
        ucp_tag_recv_info_t info{};
        if (s.ucx[i] != nullptr && ucx().tag_recv_request_test(s.ucx[i], &info) != UCS_INPROGRESS) return true;
      }
      return false;  // a slot whose buffers have all completed was finished by test()
    });
  }, fds);
}

}  // namespace megascale::transport
