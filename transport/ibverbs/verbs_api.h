// The part of libibverbs megascale calls, opened at run time as NCCL opens it: libmegascale then loads on
// machines without rdma-core, and says plainly when there is no RDMA device. Work requests and completions go
// through the objects' own ops (what the inline ibv_post_send / ibv_poll_cq of <infiniband/verbs.h> call), so
// only the control path is looked up here. LD_LIBRARY_PATH=build/testbed/roce gives the emulated device.
#pragma once

#include <infiniband/verbs.h>

#include <string>

namespace megascale::transport {

struct VerbsApi {
  ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(ibv_device**);
  const char* (*get_device_name)(ibv_device*);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  int (*query_device)(ibv_context*, ibv_device_attr*);
  int (*query_port)(ibv_context*, uint8_t, ibv_port_attr*);  // the exported entry: zero the struct first
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*);
  // A GID with its type (what ibv_query_gid_ex calls); null before rdma-core 39: sysfs gives the type then.
  int (*query_gid_ex)(ibv_context*, uint32_t, uint32_t, ibv_gid_entry*, uint32_t, size_t);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  ibv_mr* (*reg_dmabuf_mr)(ibv_pd*, uint64_t, size_t, uint64_t, int, int);  // null before rdma-core 34
  int (*dereg_mr)(ibv_mr*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroy_qp)(ibv_qp*);
  const char* (*wc_status_str)(ibv_wc_status);
  ibv_comp_channel* (*create_comp_channel)(ibv_context*);
  int (*destroy_comp_channel)(ibv_comp_channel*);
  int (*get_cq_event)(ibv_comp_channel*, ibv_cq**, void**);
  void (*ack_cq_events)(ibv_cq*, unsigned int);
};

/// libibverbs.so.1, opened once per process. Throws Error(kUnavailable) saying what is missing.
const VerbsApi& loadVerbs();

}  // namespace megascale::transport
