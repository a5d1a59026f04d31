#include "transport/ibverbs/ib_flush.h"

#include "transport/ibverbs/ib_comm.h"

namespace megascale::transport {

IbFlush::IbFlush(const std::vector<std::shared_ptr<IbDevice>>& rails, const IbQpSettings& settings, std::string peer)
    : peer_(std::move(peer)) {
  // Rail 0's landing buffer takes every rail's byte: a registration per rail, as a transfer's.
  Status s = TransferRegistration::make(rails, landing_.items.data(), sizeof(landing_.items), nullptr,
                                        &landing_.registration);
  if (!s.isOk()) throw Error(s.code(), s.message());
  IbQpSettings one = settings;
  one.qps = 1;
  qps_ = std::make_shared<IbQpSet>(rails, one, kMaxRequests, 1);
  s = qps_->connect(qps_->localInfo(), "itself (the flush queue pair for " + peer_ + ")");
  if (!s.isOk()) throw Error(s.code(), s.message());
}

Status IbFlush::post(const void* data, const IbRegistration& registration, Request** request) {
  *request = nullptr;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.in_use) continue;
    for (int q = 0; q < qps_->size(); ++q) {
      const int rail = qps_->railOf(q);
      ibv_sge sge{reinterpret_cast<uint64_t>(&landing_.items[i]), 1, landing_.registration.mr(rail)->lkey};
      ibv_send_wr wr{};
      wr.wr_id = i;
      wr.opcode = IBV_WR_RDMA_READ;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(data);
      wr.wr.rdma.rkey = registration.mr[static_cast<size_t>(rail)]->rkey;
      ibv_send_wr* bad = nullptr;
      if (int rc = qps_->qp(q)->context->ops.post_send(qps_->qp(q), &wr, &bad)) {
        return Status(ErrorCode::kSystem, "ibverbs: posting the flush of a receive from " + peer_ + " through " +
                                              qps_->device(rail).name() + " failed: " + errnoText(rc));
      }
      ++slot.outstanding;
    }
    slot.in_use = true;
    *request = &slot;
    return Status::ok();
  }
  return Status::ok();
}

bool IbFlush::owns(const Request* request) const {
  return request >= &slots_.front() && request <= &slots_.back();
}

Status IbFlush::progress() {
  ibv_wc wc[16];
  int n, rail;
  while ((n = qps_->poll(16, wc, &rail)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return completionError(*qps_, rail, wc[i], "flush of a receive from", peer_);
      if (wc[i].wr_id < slots_.size() && slots_[wc[i].wr_id].outstanding > 0) --slots_[wc[i].wr_id].outstanding;
    }
  }
  if (n < 0) return Status(ErrorCode::kSystem, "ibverbs: polling the flush completion queue failed");
  return Status::ok();
}

Status IbFlush::test(Request* request, bool* done) {
  auto* slot = static_cast<Slot*>(request);
  MSC_RETURN_IF_ERROR(progress());
  *done = slot->outstanding == 0;
  if (*done) slot->in_use = false;
  return Status::ok();
}

}  // namespace megascale::transport
