#include "transport/ibverbs/verbs_api.h"

#include <mutex>

#include "common/dynamic_library.h"
#include "common/status.h"

namespace megascale::transport {

namespace {

constexpr char kLibrary[] = "libibverbs.so.1";
VerbsApi g_api{};
std::string g_failure;

void load() {
  std::string why;
  void* library = openLibrary(kLibrary, &why);
  if (library == nullptr) {
    g_failure = "ibverbs: " + why + "; install rdma-core's libibverbs1, or choose another MEGASCALE_TRANSPORT";
    return;
  }
  std::string missing;
  bindSymbol(library, "ibv_get_device_list", &g_api.get_device_list, &missing);
  bindSymbol(library, "ibv_free_device_list", &g_api.free_device_list, &missing);
  bindSymbol(library, "ibv_get_device_name", &g_api.get_device_name, &missing);
  bindSymbol(library, "ibv_open_device", &g_api.open_device, &missing);
  bindSymbol(library, "ibv_close_device", &g_api.close_device, &missing);
  bindSymbol(library, "ibv_query_device", &g_api.query_device, &missing);
  bindSymbol(library, "ibv_query_port", &g_api.query_port, &missing);
  bindSymbol(library, "ibv_query_gid", &g_api.query_gid, &missing);
  bindSymbol(library, "_ibv_query_gid_ex", &g_api.query_gid_ex, nullptr);  // optional: sysfs has the types
  bindSymbol(library, "ibv_alloc_pd", &g_api.alloc_pd, &missing);
  bindSymbol(library, "ibv_dealloc_pd", &g_api.dealloc_pd, &missing);
  bindSymbol(library, "ibv_reg_mr", &g_api.reg_mr, &missing);
  bindSymbol(library, "ibv_reg_dmabuf_mr", &g_api.reg_dmabuf_mr, nullptr);  // optional: GPU memory only
  bindSymbol(library, "ibv_dereg_mr", &g_api.dereg_mr, &missing);
  bindSymbol(library, "ibv_create_cq", &g_api.create_cq, &missing);
  bindSymbol(library, "ibv_destroy_cq", &g_api.destroy_cq, &missing);
  bindSymbol(library, "ibv_create_qp", &g_api.create_qp, &missing);
  bindSymbol(library, "ibv_modify_qp", &g_api.modify_qp, &missing);
  bindSymbol(library, "ibv_destroy_qp", &g_api.destroy_qp, &missing);
  bindSymbol(library, "ibv_wc_status_str", &g_api.wc_status_str, &missing);
  bindSymbol(library, "ibv_create_comp_channel", &g_api.create_comp_channel, &missing);
  bindSymbol(library, "ibv_destroy_comp_channel", &g_api.destroy_comp_channel, &missing);
  bindSymbol(library, "ibv_get_cq_event", &g_api.get_cq_event, &missing);
  bindSymbol(library, "ibv_ack_cq_events", &g_api.ack_cq_events, &missing);
  if (!missing.empty()) g_failure = std::string("ibverbs: ") + kLibrary + " lacks " + missing;
}

}  // namespace

const VerbsApi& loadVerbs() {
  static std::once_flag once;
  std::call_once(once, load);
  if (!g_failure.empty()) throw Error(ErrorCode::kUnavailable, g_failure);
  return g_api;
}

}  // namespace megascale::transport
