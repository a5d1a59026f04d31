// The emulated RoCE device's RC data path between two queue pairs of one process (the NIC thread carries the
// packets over loopback UDP): SEND/RECV with and without immediate, RDMA WRITE with immediate, RDMA READ, and
// the errors a verbs program must see: RNR waits, a bad rkey, an overflowing receive, a peer that vanished.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "qp_attributes.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Retry {
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
};

class EmulatedRc : public ::testing::Test {
 protected:
  void SetUp() override {
    list_ = ibv_get_device_list(nullptr);
    ASSERT_NE(list_, nullptr);
    ASSERT_NE(list_[0], nullptr);
    context_ = ibv_open_device(list_[0]);
    ASSERT_NE(context_, nullptr);
    pd_ = ibv_alloc_pd(context_);
    cq_a_ = ibv_create_cq(context_, 256, nullptr, nullptr, 0);
    cq_b_ = ibv_create_cq(context_, 256, nullptr, nullptr, 0);
    a_ = createQp(cq_a_);
    b_ = createQp(cq_b_);
  }
  void TearDown() override {
    for (ibv_mr* m : mrs_) ibv_dereg_mr(m);
    if (a_ != nullptr) ibv_destroy_qp(a_);
    if (b_ != nullptr) ibv_destroy_qp(b_);
    ibv_destroy_cq(cq_a_);
    ibv_destroy_cq(cq_b_);
    ibv_dealloc_pd(pd_);
    ibv_close_device(context_);
    ibv_free_device_list(list_);
  }

  ibv_qp* createQp(ibv_cq* cq) {
    ibv_qp_init_attr init = qpAttributes(cq, 64, 2);
    return ibv_create_qp(pd_, &init);
  }

  // RESET -> INIT -> RTR -> RTS, pointed at `peer`.
  void connect(ibv_qp* qp, ibv_qp* peer, const Retry& retry = {}) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
    attr = {};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = IBV_MTU_1024;
    attr.dest_qp_num = peer->qp_num;
    attr.rq_psn = 100;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 1;  // 10 us
    attr.ah_attr.is_global = 1;
    attr.ah_attr.port_num = 1;
    attr.ah_attr.grh.sgid_index = 1;  // RoCE v2
    ASSERT_EQ(ibv_query_gid(context_, 1, 1, &attr.ah_attr.grh.dgid), 0);
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                           IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
              0);
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = 100;
    attr.timeout = retry.timeout;
    attr.retry_cnt = retry.retry_cnt;
    attr.rnr_retry = retry.rnr_retry;
    attr.max_rd_atomic = 1;
    ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                           IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
              0);
  }
  void connectBoth(const Retry& retry = {}) {
    connect(a_, b_, retry);
    connect(b_, a_, retry);
  }

  ibv_mr* reg(std::vector<uint8_t>& v, int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                                                        IBV_ACCESS_REMOTE_READ) {
    ibv_mr* m = ibv_reg_mr(pd_, v.data(), v.size(), access);
    mrs_.push_back(m);
    return m;
  }

  static ibv_wc waitOne(ibv_cq* cq, Clock::duration limit = 10s) {
    ibv_wc wc{};
    const auto deadline = Clock::now() + limit;
    while (ibv_poll_cq(cq, 1, &wc) == 0) {
      if (Clock::now() > deadline) {
        wc.status = IBV_WC_GENERAL_ERR;
        wc.vendor_err = 0xdead;  // the test's own timeout
        return wc;
      }
      std::this_thread::sleep_for(50us);
    }
    return wc;
  }

  void postRecv(ibv_qp* qp, ibv_mr* m, size_t size, uint64_t id) {
    ibv_sge sge{reinterpret_cast<uint64_t>(m->addr), static_cast<uint32_t>(size), m->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
  }

  void postSend(ibv_qp* qp, ibv_wr_opcode op, ibv_mr* m, size_t size, uint64_t id, uint64_t remote = 0,
                uint32_t rkey = 0, uint32_t imm = 0) {
    ibv_sge sge{reinterpret_cast<uint64_t>(m->addr), static_cast<uint32_t>(size), m->lkey};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.opcode = op;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = imm;
    wr.wr.rdma.remote_addr = remote;
    wr.wr.rdma.rkey = rkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
  }

  static std::vector<uint8_t> pattern(size_t size, uint8_t seed) {
    std::vector<uint8_t> v(size);
    for (size_t i = 0; i < size; ++i) v[i] = static_cast<uint8_t>(i * 7 + seed + (i >> 10));
    return v;
  }

  ibv_device** list_ = nullptr;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_a_ = nullptr;
  ibv_cq* cq_b_ = nullptr;
  ibv_qp* a_ = nullptr;
  ibv_qp* b_ = nullptr;
  std::vector<ibv_mr*> mrs_;
};

TEST_F(EmulatedRc, SendArrivesWholeInOrderAcrossManyPackets) {
  connectBoth();
  std::vector<uint8_t> src = pattern(3 << 20, 1), dst(4 << 20, 0);  // 3 MiB: 3072 packets of 1 KiB
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  postRecv(b_, md, dst.size(), 7);
  postSend(a_, IBV_WR_SEND, ms, src.size(), 8);
  ibv_wc s = waitOne(cq_a_), r = waitOne(cq_b_);
  ASSERT_EQ(s.status, IBV_WC_SUCCESS) << ibv_wc_status_str(s.status);
  EXPECT_EQ(s.wr_id, 8u);
  EXPECT_EQ(s.opcode, IBV_WC_SEND);
  ASSERT_EQ(r.status, IBV_WC_SUCCESS) << ibv_wc_status_str(r.status);
  EXPECT_EQ(r.wr_id, 7u);
  EXPECT_EQ(r.byte_len, src.size());
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
}

TEST_F(EmulatedRc, WriteWithImmediateLandsAndConsumesAReceive) {
  connectBoth();
  std::vector<uint8_t> src = pattern(100000, 2), dst(200000, 0), none(1);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  ibv_mr* mn = reg(none);
  postRecv(b_, mn, 0, 11);  // a receive with no buffer: the immediate's completion
  postSend(a_, IBV_WR_RDMA_WRITE_WITH_IMM, ms, src.size(), 12, reinterpret_cast<uint64_t>(dst.data()) + 1000,
           md->rkey, htonl(0xC0FFEE));
  ibv_wc s = waitOne(cq_a_), r = waitOne(cq_b_);
  ASSERT_EQ(s.status, IBV_WC_SUCCESS) << ibv_wc_status_str(s.status);
  EXPECT_EQ(s.opcode, IBV_WC_RDMA_WRITE);
  ASSERT_EQ(r.status, IBV_WC_SUCCESS) << ibv_wc_status_str(r.status);
  EXPECT_EQ(r.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
  EXPECT_TRUE(r.wc_flags & IBV_WC_WITH_IMM);
  EXPECT_EQ(ntohl(r.imm_data), 0xC0FFEEu);
  EXPECT_EQ(r.byte_len, src.size());
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 1000));
  EXPECT_EQ(dst[999], 0);
  EXPECT_EQ(dst[1000 + src.size()], 0) << "wrote past the range";
}

TEST_F(EmulatedRc, ReadFetchesRemoteMemory) {
  connectBoth();
  std::vector<uint8_t> remote = pattern(50000, 3), local(50000, 0);
  ibv_mr* mr = reg(remote);
  ibv_mr* ml = reg(local);
  postSend(a_, IBV_WR_RDMA_READ, ml, local.size(), 21, reinterpret_cast<uint64_t>(remote.data()), mr->rkey);
  ibv_wc s = waitOne(cq_a_);
  ASSERT_EQ(s.status, IBV_WC_SUCCESS) << ibv_wc_status_str(s.status);
  EXPECT_EQ(s.opcode, IBV_WC_RDMA_READ);
  EXPECT_EQ(local, remote);
}

TEST_F(EmulatedRc, ASendWithoutAPostedReceiveWaitsForOne) {
  connectBoth();
  std::vector<uint8_t> src = pattern(5000, 4), dst(5000, 0);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  postSend(a_, IBV_WR_SEND, ms, src.size(), 31);
  std::this_thread::sleep_for(50ms);  // RNR NAKs, retried (rnr_retry 7: forever)
  ibv_wc wc{};
  EXPECT_EQ(ibv_poll_cq(cq_a_, 1, &wc), 0) << "not done before the receive exists";
  postRecv(b_, md, dst.size(), 32);
  ASSERT_EQ(waitOne(cq_a_).status, IBV_WC_SUCCESS);
  ASSERT_EQ(waitOne(cq_b_).status, IBV_WC_SUCCESS);
  EXPECT_EQ(src, dst);
}

TEST_F(EmulatedRc, AWrongRkeyIsARemoteAccessError) {
  connectBoth();
  std::vector<uint8_t> src = pattern(100, 5), dst(100, 0);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst, IBV_ACCESS_LOCAL_WRITE);  // no remote write
  postSend(a_, IBV_WR_RDMA_WRITE, ms, src.size(), 41, reinterpret_cast<uint64_t>(dst.data()), md->rkey);
  ibv_wc s = waitOne(cq_a_);
  EXPECT_EQ(s.status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(s.status);
  EXPECT_EQ(a_->state, IBV_QPS_ERR);
  EXPECT_EQ(dst, std::vector<uint8_t>(100, 0)) << "nothing written";
}

TEST_F(EmulatedRc, AMessageLargerThanTheReceiveFailsBothSides) {
  connectBoth();
  std::vector<uint8_t> src = pattern(3000, 6), dst(2000, 0);
  ibv_mr* ms = reg(src);
  ibv_mr* md = reg(dst);
  postRecv(b_, md, dst.size(), 51);
  postSend(a_, IBV_WR_SEND, ms, src.size(), 52);
  EXPECT_EQ(waitOne(cq_b_).status, IBV_WC_LOC_LEN_ERR);
  EXPECT_EQ(waitOne(cq_a_).status, IBV_WC_REM_INV_REQ_ERR);
}

// The peer's queue pair is gone: every try times out, and after retry_cnt retries the send fails with
// IBV_WC_RETRY_EXC_ERR after (retry_cnt + 1) x 4.096 us x 2^timeout.
TEST_F(EmulatedRc, APeerThatVanishedExhaustsTheRetries) {
  Retry retry;
  retry.timeout = 14;  // 67 ms a try
  retry.retry_cnt = 2;
  connect(a_, b_, retry);
  connect(b_, a_, retry);
  ibv_destroy_qp(b_);
  b_ = nullptr;
  std::vector<uint8_t> src = pattern(100, 7);
  ibv_mr* ms = reg(src);
  const auto start = Clock::now();
  postSend(a_, IBV_WR_SEND, ms, src.size(), 61);
  ibv_wc s = waitOne(cq_a_);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(s.status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(s.status);
  EXPECT_GT(seconds, 3 * 0.067 * 0.9);
  EXPECT_LT(seconds, 3 * 0.067 + 1.0);
}

TEST_F(EmulatedRc, PostingToAQueuePairNotReadyToSendIsRefused) {
  std::vector<uint8_t> src(10);
  ibv_mr* ms = reg(src);
  ibv_sge sge{reinterpret_cast<uint64_t>(src.data()), 10, ms->lkey};
  ibv_send_wr wr{};
  wr.opcode = IBV_WR_SEND;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(a_, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
}

}  // namespace
