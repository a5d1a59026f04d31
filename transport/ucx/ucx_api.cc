#include "transport/ucx/ucx_api.h"

#include <mutex>
#include <string>

#include "common/dynamic_library.h"

namespace megascale::transport {

namespace {

constexpr char kLibrary[] = "libucp.so.0";
UcxApi g_api{};
std::string g_failure;

void load() {
  std::string why;
  void* library = openLibrary(kLibrary, &why);
  if (library == nullptr) {
    g_failure = "ucx: " + why + "; install libucx0, or choose another MEGASCALE_TRANSPORT";
    return;
  }
  std::string missing;
  bindSymbol(library, "ucp_config_read", &g_api.config_read, &missing);
  bindSymbol(library, "ucp_config_release", &g_api.config_release, &missing);
  bindSymbol(library, "ucp_init_version", &g_api.init_version, &missing);
  bindSymbol(library, "ucp_cleanup", &g_api.cleanup, &missing);
  bindSymbol(library, "ucp_worker_create", &g_api.worker_create, &missing);
  bindSymbol(library, "ucp_worker_destroy", &g_api.worker_destroy, &missing);
  bindSymbol(library, "ucp_worker_get_address", &g_api.worker_get_address, &missing);
  bindSymbol(library, "ucp_worker_release_address", &g_api.worker_release_address, &missing);
  bindSymbol(library, "ucp_worker_progress", &g_api.worker_progress, &missing);
  bindSymbol(library, "ucp_worker_get_efd", &g_api.worker_get_efd, &missing);
  bindSymbol(library, "ucp_worker_arm", &g_api.worker_arm, &missing);
  bindSymbol(library, "ucp_ep_create", &g_api.ep_create, &missing);
  bindSymbol(library, "ucp_ep_close_nbx", &g_api.ep_close_nbx, &missing);
  bindSymbol(library, "ucp_tag_send_nbx", &g_api.tag_send_nbx, &missing);
  bindSymbol(library, "ucp_tag_recv_nbx", &g_api.tag_recv_nbx, &missing);
  bindSymbol(library, "ucp_tag_recv_request_test", &g_api.tag_recv_request_test, &missing);
  bindSymbol(library, "ucp_request_check_status", &g_api.request_check_status, &missing);
  bindSymbol(library, "ucp_request_free", &g_api.request_free, &missing);
  bindSymbol(library, "ucp_request_cancel", &g_api.request_cancel, &missing);
  bindSymbol(library, "ucs_status_string", &g_api.status_string, &missing);  // libucs, a dependency of libucp
  if (!missing.empty()) {
    g_failure = std::string("ucx: ") + kLibrary + " lacks " + missing + " (UCX 1.10 or newer is needed)";
  }
}

}  // namespace

const UcxApi& loadUcx() {
  static std::once_flag once;
  std::call_once(once, load);
  if (!g_failure.empty()) throw Error(ErrorCode::kUnavailable, g_failure);
  return g_api;
}

const UcxApi& ucx() { return g_api; }

}  // namespace megascale::transport
