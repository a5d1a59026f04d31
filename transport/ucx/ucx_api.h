// The part of UCP megascale calls, opened at run time (as NCCL opens libibverbs): linking libucp would load UCX
// into every process that uses megascale, and UCX patches mmap and malloc when it loads (its memory hooks),
// which is not ours to do to a process that never asked for UCX (ThreadSanitizer, for one, crashes on it).
// The headers come from libucx-dev at build time; the library from libucx0 when the ucx transport is made.
#pragma once

#include <ucp/api/ucp.h>

#include "common/status.h"

namespace megascale::transport {

struct UcxApi {
  decltype(&ucp_config_read) config_read;
  decltype(&ucp_config_release) config_release;
  decltype(&ucp_init_version) init_version;
  decltype(&ucp_cleanup) cleanup;
  decltype(&ucp_worker_create) worker_create;
  decltype(&ucp_worker_destroy) worker_destroy;
  decltype(&ucp_worker_get_address) worker_get_address;
  decltype(&ucp_worker_release_address) worker_release_address;
  decltype(&ucp_worker_progress) worker_progress;
  decltype(&ucp_worker_get_efd) worker_get_efd;
  decltype(&ucp_worker_arm) worker_arm;
  decltype(&ucp_ep_create) ep_create;
  decltype(&ucp_ep_close_nbx) ep_close_nbx;
  decltype(&ucp_tag_send_nbx) tag_send_nbx;
  decltype(&ucp_tag_recv_nbx) tag_recv_nbx;
  decltype(&ucp_tag_recv_request_test) tag_recv_request_test;
  decltype(&ucp_request_check_status) request_check_status;
  decltype(&ucp_request_free) request_free;
  decltype(&ucp_request_cancel) request_cancel;
  decltype(&ucs_status_string) status_string;
};

/// Loads libucp once per process. Throws Error(kUnavailable) saying what is missing.
const UcxApi& loadUcx();

/// The API loadUcx() loaded (call only after it succeeded: a UcxWorker exists).
const UcxApi& ucx();

}  // namespace megascale::transport
