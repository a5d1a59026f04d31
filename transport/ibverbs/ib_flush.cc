#include "transport/ibverbs/ib_flush.h"

#include "transport/ibverbs/ib_comm.h"

namespace megascale::transport {

IbFlush::IbFlush(std::shared_ptr<IbDevice> device, const IbQpSettings& settings, std::string peer)
    : peer_(std::move(peer)) {
  landing_.registerOn(*device);
  IbQpSettings one = settings;
  one.qps = 1;
  qp_ = std::make_shared<IbQpSet>(device, one, kMaxRequests, 1);
  Status s = qp_->connect(qp_->localInfo(), "itself (the flush queue pair for " + peer_ + ")");
  if (!s.isOk()) throw Error(s.code(), s.message());
}

Status IbFlush::post(const void* data, const ibv_mr& mr, Request** request) {
  *request = nullptr;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.in_use) continue;
    ibv_sge sge{reinterpret_cast<uint64_t>(&landing_.items[i]), 1, landing_.registration.mr()->lkey};
    ibv_send_wr wr{};
    wr.wr_id = i;
    wr.opcode = IBV_WR_RDMA_READ;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uint64_t>(data);
    wr.wr.rdma.rkey = mr.rkey;
    ibv_send_wr* bad = nullptr;
    if (int rc = qp_->qp(0)->context->ops.post_send(qp_->qp(0), &wr, &bad)) {
      return Status(ErrorCode::kSystem, "ibverbs: posting the flush of a receive from " + peer_ + " failed: " +
                                            errnoText(rc));
    }
    slot.in_use = true;
    slot.done = false;
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
  int n;
  while ((n = qp_->poll(16, wc)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return completionError(*qp_, wc[i], "flush of a receive from", peer_);
      if (wc[i].wr_id < slots_.size()) slots_[wc[i].wr_id].done = true;
    }
  }
  if (n < 0) return Status(ErrorCode::kSystem, "ibverbs: polling the flush completion queue failed");
  return Status::ok();
}

Status IbFlush::test(Request* request, bool* done) {
  auto* slot = static_cast<Slot*>(request);
  MSC_RETURN_IF_ERROR(progress());
  *done = slot->done;
  if (slot->done) slot->in_use = false;
  return Status::ok();
}

}  // namespace megascale::transport
