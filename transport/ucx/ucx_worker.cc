#include "transport/ucx/ucx_worker.h"

#include <sys/eventfd.h>

#include "common/process_shared.h"
#include "common/socket.h"

namespace megascale::transport {

std::string ucxError(const std::string& what, ucs_status_t status) {
  return what + ": " + ucx().status_string(status);
}

std::shared_ptr<UcxWorker> UcxWorker::shared() {
  static ProcessShared<UcxWorker> worker;
  return worker.get([] { return std::make_shared<UcxWorker>(); });
}

UcxWorker::UcxWorker() {
  loadUcx();
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucx().config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) throw Error(ErrorCode::kUnavailable, ucxError("ucx: reading UCX_* settings", s));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;  // waiters sleep in poll() on the worker's descriptor
  s = ucx().init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context_);
  ucx().config_release(config);
  if (s != UCS_OK) throw Error(ErrorCode::kUnavailable, ucxError("ucx: no usable transport (check UCX_TLS)", s));
  ucp_worker_params_t worker_params{};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // any thread, one at a time: our lock
  s = ucx().worker_create(context_, &worker_params, &worker_);
  if (s != UCS_OK) {
    ucx().cleanup(context_);
    throw Error(ErrorCode::kUnavailable, ucxError("ucx: creating a worker", s));
  }
  ucp_address_t* address = nullptr;
  size_t length = 0;
  s = ucx().worker_get_address(worker_, &address, &length);
  if (s != UCS_OK) {
    ucx().worker_destroy(worker_);
    ucx().cleanup(context_);
    throw Error(ErrorCode::kUnavailable, ucxError("ucx: the worker's address", s));
  }
  address_.assign(reinterpret_cast<const char*>(address), length);
  ucx().worker_release_address(worker_, address);
  if (ucx().worker_get_efd(worker_, &event_fd_) != UCS_OK) event_fd_ = -1;
  always_ready_ = Fd(eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK));
}

UcxWorker::Arming UcxWorker::arm() {
  if (event_fd_ < 0 || !always_ready_.valid()) return Arming::kNoDescriptor;
  // Progress that does anything may complete a request of any comm on this worker, one its caller tested
  // before: that caller must look again, not sleep. UCX arms only an idle worker (else UCS_ERR_BUSY).
  if (ucx().worker_progress(worker_) != 0) return Arming::kBusy;
  const ucs_status_t armed = ucx().worker_arm(worker_);
  if (armed == UCS_OK) return Arming::kArmed;
  return armed == UCS_ERR_BUSY ? Arming::kBusy : Arming::kNoDescriptor;
}

UcxWorker::~UcxWorker() {
  ucx().worker_destroy(worker_);
  ucx().cleanup(context_);
}

void UcxWorker::closeEndpoint(ucp_ep_h ep, bool flush, std::chrono::milliseconds flush_timeout) {
  // Without UCX's error handling there is no forced close: the close flushes, and one that cannot finish (a dead
  // peer, or one that does not progress) is left to UCX, which releases it when the worker goes.
  ucp_request_param_t param{};
  ucs_status_ptr_t close = ucx().ep_close_nbx(ep, &param);
  Deadline deadline = deadlineAfter(flush ? flush_timeout : std::chrono::milliseconds(0));
  while (UCS_PTR_IS_PTR(close) && ucx().request_check_status(close) == UCS_INPROGRESS && Clock::now() < deadline) {
    ucx().worker_progress(worker_);
  }
  if (UCS_PTR_IS_PTR(close)) ucx().request_free(close);
}

}  // namespace megascale::transport
