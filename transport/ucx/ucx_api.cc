#include "transport/ucx/ucx_api.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace megascale::transport {

namespace {

constexpr char kLibrary[] = "libucp.so.0";
UcxApi g_api{};
std::string g_failure;

template <typename F>
void bind(void* library, const char* name, F* slot, std::string* missing) {
  *slot = reinterpret_cast<F>(dlsym(library, name));
  if (*slot == nullptr && missing->empty()) *missing = name;
}

void load() {
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    g_failure = std::string("ucx: cannot open ") + kLibrary + " (" + (why ? why : "unknown") +
                "); install libucx0, or choose another MEGASCALE_TRANSPORT";
    return;
  }
  std::string missing;
  bind(library, "ucp_config_read", &g_api.config_read, &missing);
  bind(library, "ucp_config_release", &g_api.config_release, &missing);
  bind(library, "ucp_init_version", &g_api.init_version, &missing);
  bind(library, "ucp_cleanup", &g_api.cleanup, &missing);
  bind(library, "ucp_worker_create", &g_api.worker_create, &missing);
  bind(library, "ucp_worker_destroy", &g_api.worker_destroy, &missing);
  bind(library, "ucp_worker_get_address", &g_api.worker_get_address, &missing);
  bind(library, "ucp_worker_release_address", &g_api.worker_release_address, &missing);
  bind(library, "ucp_worker_progress", &g_api.worker_progress, &missing);
  bind(library, "ucp_ep_create", &g_api.ep_create, &missing);
  bind(library, "ucp_ep_close_nbx", &g_api.ep_close_nbx, &missing);
  bind(library, "ucp_tag_send_nbx", &g_api.tag_send_nbx, &missing);
  bind(library, "ucp_tag_recv_nbx", &g_api.tag_recv_nbx, &missing);
  bind(library, "ucp_tag_recv_request_test", &g_api.tag_recv_request_test, &missing);
  bind(library, "ucp_request_check_status", &g_api.request_check_status, &missing);
  bind(library, "ucp_request_free", &g_api.request_free, &missing);
  bind(library, "ucp_request_cancel", &g_api.request_cancel, &missing);
  bind(library, "ucs_status_string", &g_api.status_string, &missing);  // libucs, a dependency of libucp
  if (!missing.empty()) {
    g_failure = std::string("ucx: ") + kLibrary + " lacks " + missing + " (UCX 1.10 or newer is needed)";
  }
  // The library stays loaded for the process's life: UCX does not support being unloaded.
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
