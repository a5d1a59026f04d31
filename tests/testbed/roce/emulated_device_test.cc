// The emulated RoCE device's control path, called as any verbs program calls it: the device and its port, the
// keys of memory regions, and the RC queue pair state machine of the IB specification.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "qp_attributes.h"

namespace {

class EmulatedDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    list_ = ibv_get_device_list(&n);
    ASSERT_NE(list_, nullptr);
    ASSERT_GE(n, 1) << "the emulated device finds at least the loopback interface";
    context_ = ibv_open_device(list_[0]);
    ASSERT_NE(context_, nullptr);
    pd_ = ibv_alloc_pd(context_);
    ASSERT_NE(pd_, nullptr);
    cq_ = ibv_create_cq(context_, 64, nullptr, nullptr, 0);
    ASSERT_NE(cq_, nullptr);
  }
  void TearDown() override {
    if (cq_ != nullptr) ibv_destroy_cq(cq_);
    if (pd_ != nullptr) ibv_dealloc_pd(pd_);
    if (context_ != nullptr) ibv_close_device(context_);
    if (list_ != nullptr) ibv_free_device_list(list_);
  }

  ibv_qp* createQp() {
    ibv_qp_init_attr init = qpAttributes(cq_, 16, 1);
    return ibv_create_qp(pd_, &init);
  }

  ibv_device** list_ = nullptr;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
};

TEST_F(EmulatedDevice, ListsItsAddressAsRoceV1ThenRoceV2AsAConnectXDoes) {
  EXPECT_EQ(std::strncmp(ibv_get_device_name(list_[0]), "emroce", 6), 0) << ibv_get_device_name(list_[0]);
  ibv_device_attr device{};
  ASSERT_EQ(ibv_query_device(context_, &device), 0);
  EXPECT_EQ(device.phys_port_cnt, 1);
  EXPECT_EQ(device.vendor_id, 0xffffu) << "an emulated NIC never passes for a real vendor's";
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(context_, 1, &port), 0);
  EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_ETHERNET);
  EXPECT_EQ(port.state, IBV_PORT_ACTIVE);
  EXPECT_EQ(port.gid_tbl_len, 2);
  ibv_gid gid{};
  ASSERT_EQ(ibv_query_gid(context_, 1, 0, &gid), 0);
  EXPECT_EQ(gid.raw[10], 0xff);
  EXPECT_EQ(gid.raw[11], 0xff) << "an IPv4-mapped GID";
  for (uint32_t index : {0u, 1u}) {
    ibv_gid_entry entry{};
    ASSERT_EQ(ibv_query_gid_ex(context_, 1, index, &entry, 0), 0);
    EXPECT_EQ(entry.gid_type, index == 0 ? IBV_GID_TYPE_ROCE_V1 : IBV_GID_TYPE_ROCE_V2) << "v1 first, as a ConnectX lists them";
    EXPECT_EQ(entry.gid_index, index);
    EXPECT_EQ(std::memcmp(entry.gid.raw, gid.raw, sizeof(gid.raw)), 0) << "one address, two types";
  }
  ibv_gid_entry table[4]{};
  EXPECT_EQ(ibv_query_gid_table(context_, table, 4, 0), 2);
  EXPECT_EQ(table[1].gid_type, IBV_GID_TYPE_ROCE_V2);
  EXPECT_NE(ibv_query_gid(context_, 1, 2, &gid), 0) << "two GIDs per port";
  EXPECT_NE(ibv_query_port(context_, 2, &port), 0) << "one port";
}

// EMU_ROCE_LINK_LAYER=infiniband (each test is a process of its own, so setting it before the first device
// list takes): an InfiniBand port with a LID and one GID of type IB, whose queue pairs take a LID without a GRH.
TEST(EmulatedInfiniBand, APortWithALidWhoseQueuePairsAddressByLid) {
  setenv("EMU_ROCE_LINK_LAYER", "infiniband", 1);
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  ASSERT_TRUE(list != nullptr && count > 0);
  ibv_context* context = ibv_open_device(list[0]);
  ASSERT_NE(context, nullptr);
  ibv_port_attr port{};
  ASSERT_EQ(ibv_query_port(context, 1, &port), 0);
  EXPECT_EQ(port.link_layer, IBV_LINK_LAYER_INFINIBAND);
  EXPECT_EQ(port.lid, 1) << "127.0.0.1's low 16 bits";
  EXPECT_EQ(port.gid_tbl_len, 1);
  ibv_gid_entry entry{};
  ASSERT_EQ(ibv_query_gid_ex(context, 1, 0, &entry, 0), 0);
  EXPECT_EQ(entry.gid_type, IBV_GID_TYPE_IB);
  EXPECT_EQ(entry.gid.raw[0], 0xfe);
  EXPECT_EQ(entry.gid.raw[1], 0x80) << "the link-local subnet prefix";
  ibv_pd* pd = ibv_alloc_pd(context);
  ibv_cq* cq = ibv_create_cq(context, 16, nullptr, nullptr, 0);
  ibv_qp_init_attr init{};
  init.send_cq = init.recv_cq = cq;
  init.qp_type = IBV_QPT_RC;
  init.cap.max_send_wr = init.cap.max_recv_wr = 4;
  init.cap.max_send_sge = init.cap.max_recv_sge = 1;
  ibv_qp* qp = ibv_create_qp(pd, &init);
  ASSERT_NE(qp, nullptr);
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_INIT;
  attr.port_num = 1;
  attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
  ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS), 0);
  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = qp->qp_num;
  attr.max_dest_rd_atomic = 1;
  attr.ah_attr.port_num = 1;
  const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  EXPECT_NE(ibv_modify_qp(qp, &attr, rtr), 0) << "neither a LID nor a GRH";
  attr.ah_attr.dlid = port.lid;
  ASSERT_EQ(ibv_modify_qp(qp, &attr, rtr), 0) << "a LID alone reaches a port of this subnet";
  ibv_destroy_qp(qp);
  ibv_destroy_cq(cq);
  ibv_dealloc_pd(pd);
  ibv_close_device(context);
  ibv_free_device_list(list);
}

TEST_F(EmulatedDevice, MemoryRegionsHaveDistinctKeysAndRefuseRemoteWriteWithoutLocalWrite) {
  std::vector<char> a(4096), b(4096);
  ibv_mr* ma = ibv_reg_mr(pd_, a.data(), a.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ibv_mr* mb = ibv_reg_mr(pd_, b.data(), b.size(), IBV_ACCESS_LOCAL_WRITE);
  ASSERT_NE(ma, nullptr);
  ASSERT_NE(mb, nullptr);
  EXPECT_NE(ma->lkey, mb->lkey);
  EXPECT_NE(ma->rkey, mb->rkey);
  EXPECT_NE(ma->rkey, ma->lkey) << "a peer that uses an lkey as an rkey must be caught";
  EXPECT_EQ(ma->addr, a.data());
  errno = 0;
  EXPECT_EQ(ibv_reg_mr(pd_, a.data(), a.size(), IBV_ACCESS_REMOTE_WRITE), nullptr);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(ibv_dereg_mr(ma), 0);
  EXPECT_EQ(ibv_dereg_mr(mb), 0);
}

TEST_F(EmulatedDevice, QueuePairsFollowTheRcStateMachine) {
  ibv_qp* qp = createQp();
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(qp->state, IBV_QPS_RESET);
  EXPECT_NE(qp->qp_num >> 8, 0u) << "the queue pair number carries its UDP port";

  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_RTR;
  EXPECT_NE(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0) << "RESET to RTR skips INIT";
  attr.qp_state = IBV_QPS_INIT;
  EXPECT_NE(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0) << "INIT needs the port, P_Key index and access flags";
  attr.port_num = 1;
  attr.pkey_index = 0;
  attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  ASSERT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_ACCESS_FLAGS), 0);
  EXPECT_EQ(qp->state, IBV_QPS_INIT);

  attr = {};
  attr.qp_state = IBV_QPS_RTR;
  attr.path_mtu = IBV_MTU_1024;
  attr.dest_qp_num = qp->qp_num;
  attr.rq_psn = 7;
  attr.max_dest_rd_atomic = 1;
  attr.min_rnr_timer = 12;
  attr.ah_attr.port_num = 1;
  const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  EXPECT_NE(ibv_modify_qp(qp, &attr, rtr), 0) << "RoCE needs a GRH: the peer's GID";
  attr.ah_attr.is_global = 1;
  ASSERT_EQ(ibv_query_gid(context_, 1, 1, &attr.ah_attr.grh.dgid), 0);
  attr.ah_attr.grh.sgid_index = 0;
  EXPECT_NE(ibv_modify_qp(qp, &attr, rtr), 0) << "RoCE v1 (GID index 0) does not cross this routed fabric";
  attr.ah_attr.grh.sgid_index = 1;
  ASSERT_EQ(ibv_modify_qp(qp, &attr, rtr), 0);

  attr = {};
  attr.qp_state = IBV_QPS_RTS;
  attr.sq_psn = 7;
  attr.timeout = 32;  // beyond the 5-bit field
  attr.retry_cnt = 7;
  attr.rnr_retry = 7;
  attr.max_rd_atomic = 1;
  const int rts = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                  IBV_QP_MAX_QP_RD_ATOMIC;
  EXPECT_NE(ibv_modify_qp(qp, &attr, rts), 0);
  attr.timeout = 14;
  ASSERT_EQ(ibv_modify_qp(qp, &attr, rts), 0);
  EXPECT_EQ(qp->state, IBV_QPS_RTS);

  ibv_qp_attr seen{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qp, &seen, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT, &init), 0);
  EXPECT_EQ(seen.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(seen.timeout, 14);
  EXPECT_EQ(seen.retry_cnt, 7);
  EXPECT_EQ(seen.dest_qp_num, qp->qp_num);

  attr = {};
  attr.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0) << "any state may go to ERR";
  attr.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(ibv_modify_qp(qp, &attr, IBV_QP_STATE), 0) << "and to RESET";
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
}

TEST_F(EmulatedDevice, OnlyReliableConnectedQueuePairsAreOffered) {
  ibv_qp_init_attr init = qpAttributes(cq_, 1, 0, IBV_QPT_UD);
  errno = 0;
  EXPECT_EQ(ibv_create_qp(pd_, &init), nullptr);
  EXPECT_EQ(errno, EOPNOTSUPP);
}

TEST_F(EmulatedDevice, AnEmptyCompletionQueuePollsNothing) {
  ibv_wc wc[4];
  EXPECT_EQ(ibv_poll_cq(cq_, 4, wc), 0);
}

}  // namespace
