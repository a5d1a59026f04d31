// libibverbs' private provider interface (IBVERBS_PRIVATE_34): the kernel-command helpers that libmlx5 and
// libefa import. perftest links those providers, so the symbols must exist for its BIND_NOW load, but they are
// only ever called for those providers' own devices, which do not exist here: each fails with EOPNOTSUPP.
// (No <infiniband/verbs.h> here: the real prototypes do not matter for a C function that takes no argument.)
#include <cerrno>

#define MEGASCALE_VERBS_STUB(name) \
  extern "C" int name() {          \
    errno = EOPNOTSUPP;            \
    return EOPNOTSUPP;             \
  }

MEGASCALE_VERBS_STUB(_verbs_init_and_alloc_context)
MEGASCALE_VERBS_STUB(execute_ioctl)
MEGASCALE_VERBS_STUB(ibv_cmd_advise_mr)
MEGASCALE_VERBS_STUB(ibv_cmd_alloc_dm)
MEGASCALE_VERBS_STUB(ibv_cmd_alloc_mw)
MEGASCALE_VERBS_STUB(ibv_cmd_alloc_pd)
MEGASCALE_VERBS_STUB(ibv_cmd_attach_mcast)
MEGASCALE_VERBS_STUB(ibv_cmd_close_xrcd)
MEGASCALE_VERBS_STUB(ibv_cmd_create_ah)
MEGASCALE_VERBS_STUB(ibv_cmd_create_counters)
MEGASCALE_VERBS_STUB(ibv_cmd_create_cq_ex)
MEGASCALE_VERBS_STUB(ibv_cmd_create_flow)
MEGASCALE_VERBS_STUB(ibv_cmd_create_flow_action_esp)
MEGASCALE_VERBS_STUB(ibv_cmd_create_qp_ex2)
MEGASCALE_VERBS_STUB(ibv_cmd_create_qp_ex)
MEGASCALE_VERBS_STUB(ibv_cmd_create_rwq_ind_table)
MEGASCALE_VERBS_STUB(ibv_cmd_create_srq)
MEGASCALE_VERBS_STUB(ibv_cmd_create_srq_ex)
MEGASCALE_VERBS_STUB(ibv_cmd_create_wq)
MEGASCALE_VERBS_STUB(ibv_cmd_dealloc_mw)
MEGASCALE_VERBS_STUB(ibv_cmd_dealloc_pd)
MEGASCALE_VERBS_STUB(ibv_cmd_dereg_mr)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_ah)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_counters)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_cq)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_flow)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_flow_action)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_qp)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_rwq_ind_table)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_srq)
MEGASCALE_VERBS_STUB(ibv_cmd_destroy_wq)
MEGASCALE_VERBS_STUB(ibv_cmd_detach_mcast)
MEGASCALE_VERBS_STUB(ibv_cmd_free_dm)
MEGASCALE_VERBS_STUB(ibv_cmd_get_context)
MEGASCALE_VERBS_STUB(ibv_cmd_modify_cq)
MEGASCALE_VERBS_STUB(ibv_cmd_modify_flow_action_esp)
MEGASCALE_VERBS_STUB(ibv_cmd_modify_qp)
MEGASCALE_VERBS_STUB(ibv_cmd_modify_qp_ex)
MEGASCALE_VERBS_STUB(ibv_cmd_modify_srq)
MEGASCALE_VERBS_STUB(ibv_cmd_modify_wq)
MEGASCALE_VERBS_STUB(ibv_cmd_open_qp)
MEGASCALE_VERBS_STUB(ibv_cmd_open_xrcd)
MEGASCALE_VERBS_STUB(ibv_cmd_query_context)
MEGASCALE_VERBS_STUB(ibv_cmd_query_device_any)
MEGASCALE_VERBS_STUB(ibv_cmd_query_mr)
MEGASCALE_VERBS_STUB(ibv_cmd_query_port)
MEGASCALE_VERBS_STUB(ibv_cmd_query_qp)
MEGASCALE_VERBS_STUB(ibv_cmd_query_srq)
MEGASCALE_VERBS_STUB(ibv_cmd_read_counters)
MEGASCALE_VERBS_STUB(ibv_cmd_reg_dm_mr)
MEGASCALE_VERBS_STUB(ibv_cmd_reg_dmabuf_mr)
MEGASCALE_VERBS_STUB(ibv_cmd_reg_mr)
MEGASCALE_VERBS_STUB(ibv_cmd_rereg_mr)
MEGASCALE_VERBS_STUB(ibv_cmd_resize_cq)
MEGASCALE_VERBS_STUB(verbs_allow_disassociate_destroy)
MEGASCALE_VERBS_STUB(verbs_init_cq)
MEGASCALE_VERBS_STUB(verbs_open_device)
MEGASCALE_VERBS_STUB(verbs_set_ops)
MEGASCALE_VERBS_STUB(verbs_uninit_context)

// Kernel-structure converters librdmacm imports; only its kernel paths, absent here, call them.
extern "C" void ibv_copy_ah_attr_from_kern() {}
extern "C" void ibv_copy_qp_attr_from_kern() {}
extern "C" void ibv_copy_path_rec_from_kern() {}

// Called from the providers' load-time constructors: registering a driver that will never match a device.
extern "C" void verbs_register_driver_34() {}
extern "C" void __verbs_log() {}
