// The creation attributes of the queue pairs the emulated-device tests make: both queues on `cq`, `depth` work
// requests and `sges` scatter/gather entries each way.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>

inline ibv_qp_init_attr qpAttributes(ibv_cq* cq, uint32_t depth, uint32_t sges, ibv_qp_type type = IBV_QPT_RC) {
  ibv_qp_init_attr init{};
  init.send_cq = cq;
  init.recv_cq = cq;
  init.qp_type = type;
  init.cap.max_send_wr = depth;
  init.cap.max_recv_wr = depth;
  init.cap.max_send_sge = sges;
  init.cap.max_recv_sge = sges;
  return init;
}
