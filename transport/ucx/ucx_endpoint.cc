#include "transport/ucx/ucx_endpoint.h"

namespace megascale::transport {

namespace {
// A close waits this long for in-flight sends to reach a live peer before forcing the endpoint shut.
constexpr std::chrono::milliseconds kCloseFlushTimeout{2000};
}  // namespace

UcxEndpoint::UcxEndpoint(std::shared_ptr<UcxWorker> worker, const std::string& worker_address, std::string peer)
    : worker_(std::move(worker)), peer_(std::move(peer)) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  params.address = reinterpret_cast<const ucp_address_t*>(worker_address.data());
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ucs_status_t s = ucx().ep_create(worker_->worker(), &params, &ep_);
  if (s != UCS_OK) throw Error(ErrorCode::kPeerLost, ucxError("ucx: connecting to " + peer_ + " (check UCX_TLS)", s));
}

UcxEndpoint::~UcxEndpoint() {
  std::lock_guard<SpinLock> guard(worker_->lock());
  worker_->closeEndpoint(ep_, flush_on_close_, kCloseFlushTimeout);
}

}  // namespace megascale::transport
