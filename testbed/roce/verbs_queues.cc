// The data path the caller reaches through the context's ops (ibv_post_send, ibv_post_recv, ibv_poll_cq and
// ibv_req_notify_cq are inline functions of <infiniband/verbs.h> that call them), and what the emulated NIC does
// not offer (address handles, SRQs, multicast, the extended QP API), refused with the error a NIC without the
// feature gives.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "testbed/roce/emulated.h"

using namespace megascale::testbed::roce;

namespace {

int pollCq(ibv_cq* cq, int num_entries, ibv_wc* wc) {
  auto* q = reinterpret_cast<EmuCq*>(cq);
  std::lock_guard<std::mutex> guard(q->lock);
  const int n = std::min<int>(num_entries, static_cast<int>(q->entries.size()));
  std::copy(q->entries.begin(), q->entries.begin() + n, wc);
  q->entries.erase(q->entries.begin(), q->entries.begin() + n);
  return n;
}

int reqNotifyCq(ibv_cq* cq, int) {
  auto* q = reinterpret_cast<EmuCq*>(cq);
  if (cq->channel == nullptr) return EINVAL;
  std::lock_guard<std::mutex> guard(q->lock);
  q->armed = true;
  return 0;
}

std::vector<Sge> copySges(const ibv_sge* list, int n) {
  std::vector<Sge> out;
  for (int i = 0; i < n; ++i) out.push_back(Sge{list[i].addr, list[i].length, list[i].lkey});
  return out;
}

bool supported(ibv_wr_opcode op) {
  return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE ||
         op == IBV_WR_RDMA_WRITE_WITH_IMM || op == IBV_WR_RDMA_READ;
}

// Work requests are checked and copied here; the NIC thread moves them. Errors reject the WR at *bad, as
// ibv_post_send(3) says: a QP not in RTS, too many entries, an opcode the device lacks, a full queue.
int postSend(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  auto* q = reinterpret_cast<EmuQp*>(qp);
  EmuContext* c = emu(qp->context);
  std::lock_guard<std::mutex> guard(c->lock);
  for (; wr != nullptr; wr = wr->next) {
    int error = 0;
    if (qp->state != IBV_QPS_RTS) error = EINVAL;
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_send_sge) error = EINVAL;
    if (!supported(wr->opcode)) error = EOPNOTSUPP;
    if (q->send_queue.size() >= q->cap.max_send_wr) error = ENOMEM;
    if (error != 0) {
      *bad = wr;
      return error;
    }
    SendWqe w{};
    w.wr_id = wr->wr_id;
    w.opcode = wr->opcode;
    w.signaled = (wr->send_flags & IBV_SEND_SIGNALED) || q->sq_sig_all;
    w.imm = wr->imm_data;
    w.remote_addr = wr->wr.rdma.remote_addr;
    w.rkey = wr->wr.rdma.rkey;
    w.sges = copySges(wr->sg_list, wr->num_sge);
    for (const Sge& s : w.sges) w.length += s.length;
    q->send_queue.push_back(std::move(w));
  }
  ringDoorbell(c);
  return 0;
}

int postRecv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  auto* q = reinterpret_cast<EmuQp*>(qp);
  EmuContext* c = emu(qp->context);
  std::lock_guard<std::mutex> guard(c->lock);
  for (; wr != nullptr; wr = wr->next) {
    int error = 0;
    if (qp->state == IBV_QPS_RESET) error = EINVAL;
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > q->cap.max_recv_sge) error = EINVAL;
    if (q->recv_queue.size() >= q->cap.max_recv_wr) error = ENOMEM;
    if (error != 0) {
      *bad = wr;
      return error;
    }
    q->recv_queue.push_back(RecvWqe{wr->wr_id, copySges(wr->sg_list, wr->num_sge)});
  }
  return 0;
}

int postSrqRecv(ibv_srq*, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  *bad = wr;
  return EOPNOTSUPP;
}

}  // namespace

namespace megascale::testbed::roce {

void installDataPathOps(ibv_context_ops* ops) {
  ops->poll_cq = pollCq;
  ops->req_notify_cq = reqNotifyCq;
  ops->post_send = postSend;
  ops->post_recv = postRecv;
  ops->post_srq_recv = postSrqRecv;
}

}  // namespace megascale::testbed::roce

extern "C" {

ibv_ah* ibv_create_ah(ibv_pd*, ibv_ah_attr*) { return failNull<ibv_ah>(EOPNOTSUPP); }
ibv_ah* ibv_create_ah_from_wc(ibv_pd*, ibv_wc*, ibv_grh*, uint8_t) { return failNull<ibv_ah>(EOPNOTSUPP); }
int ibv_destroy_ah(ibv_ah*) { return fail(EOPNOTSUPP); }
int ibv_attach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return fail(EOPNOTSUPP); }
int ibv_detach_mcast(ibv_qp*, const ibv_gid*, uint16_t) { return fail(EOPNOTSUPP); }
ibv_srq* ibv_create_srq(ibv_pd*, ibv_srq_init_attr*) { return failNull<ibv_srq>(EOPNOTSUPP); }
int ibv_destroy_srq(ibv_srq*) { return fail(EOPNOTSUPP); }
int ibv_modify_srq(ibv_srq*, ibv_srq_attr*, int) { return fail(EOPNOTSUPP); }
int ibv_query_srq(ibv_srq*, ibv_srq_attr*) { return fail(EOPNOTSUPP); }
ibv_qp_ex* ibv_qp_to_qp_ex(ibv_qp*) { return failNull<ibv_qp_ex>(EOPNOTSUPP); }
int ibv_query_ece(ibv_qp*, ibv_ece*) { return fail(EOPNOTSUPP); }
int ibv_set_ece(ibv_qp*, ibv_ece*) { return fail(EOPNOTSUPP); }
int ibv_dontfork_range(void*, size_t) { return 0; }
int ibv_dofork_range(void*, size_t) { return 0; }

}  // extern "C"
