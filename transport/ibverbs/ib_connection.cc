#include "transport/ibverbs/ib_connection.h"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "common/crypto.h"
#include "transport/ibverbs/ib_wire.h"

namespace megascale::transport {

std::string QpSetInfo::encode() const {
  return std::string(reinterpret_cast<const char*>(this), sizeof(*this));
}

uint32_t flowLabelOf(uint32_t local_qpn, uint32_t remote_qpn, size_t index) {
  const uint64_t h = (uint64_t{local_qpn} << 32 | remote_qpn) * 0x9e3779b97f4a7c15ULL;
  return static_cast<uint32_t>(((h >> 40) + index) % 0x3fff) + 1;
}

Status QpSetInfo::decode(const std::string& blob, QpSetInfo* info) {
  if (blob.size() != sizeof(QpSetInfo)) {
    return Status(ErrorCode::kPeerLost, "ibverbs: a queue pair description of " + std::to_string(blob.size()) +
                                            " bytes (expected " + std::to_string(sizeof(QpSetInfo)) + ")");
  }
  std::memcpy(info, blob.data(), sizeof(*info));
  if (info->count < 1 || info->count > static_cast<uint32_t>(kMaxQpsPerConnection) || info->mtu < IBV_MTU_256 ||
      info->mtu > IBV_MTU_4096 || info->eager_bytes > ib_wire::kEagerBytes || info->lid > 0xffff) {
    return Status(ErrorCode::kPeerLost, "ibverbs: a queue pair description with " + std::to_string(info->count) +
                                            " queue pairs, MTU code " + std::to_string(info->mtu) +
                                            ", an eager limit of " + std::to_string(info->eager_bytes) +
                                            " bytes and LID " + std::to_string(info->lid));
  }
  return Status::ok();
}

IbQpSet::IbQpSet(std::shared_ptr<IbDevice> device, const IbQpSettings& settings, int send_depth, int recv_depth)
    : device_(std::move(device)), settings_(settings) {
  const VerbsApi& api = device_->api();
  const int n = std::clamp(settings.qps, 1, kMaxQpsPerConnection);
  channel_ = api.create_comp_channel(device_->context());
  if (channel_ == nullptr) throw Error(ErrorCode::kSystem, "ibverbs: " + device_->name() + ": no completion channel");
  fcntl(channel_->fd, F_SETFL, fcntl(channel_->fd, F_GETFL) | O_NONBLOCK);  // events are taken without waiting
  found_fd_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  cq_ = api.create_cq(device_->context(), n * (send_depth + recv_depth), nullptr, channel_, 0);
  if (cq_ == nullptr) throw Error(ErrorCode::kSystem, "ibverbs: " + device_->name() + ": ibv_create_cq failed");
  randomBytes(&psn_, sizeof(psn_));
  psn_ &= 0xffffff;
  for (int i = 0; i < n; ++i) {
    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = static_cast<uint32_t>(send_depth);
    init.cap.max_recv_wr = static_cast<uint32_t>(recv_depth);
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ibv_qp* qp = api.create_qp(device_->pd(), &init);
    if (qp == nullptr) throw Error(ErrorCode::kSystem, "ibverbs: " + device_->name() + ": ibv_create_qp failed");
    qps_.push_back(qp);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = device_->port();
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (api.modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
      throw Error(ErrorCode::kSystem, "ibverbs: " + device_->name() + ": a queue pair refused INIT");
    }
  }
}

IbQpSet::~IbQpSet() {
  for (ibv_qp* qp : qps_) device_->api().destroy_qp(qp);
  if (cq_ != nullptr) device_->api().destroy_cq(cq_);
  if (channel_ != nullptr) device_->api().destroy_comp_channel(channel_);
}

int IbQpSet::poll(int max, ibv_wc* out) {
  if (!found_while_arming_.empty()) {
    const int n = std::min<int>(max, static_cast<int>(found_while_arming_.size()));
    std::copy(found_while_arming_.begin(), found_while_arming_.begin() + n, out);
    found_while_arming_.erase(found_while_arming_.begin(), found_while_arming_.begin() + n);
    if (found_while_arming_.empty()) {
      uint64_t count;
      (void)!read(found_fd_.get(), &count, sizeof(count));
    }
    return n;
  }
  return cq_->context->ops.poll_cq(cq_, max, out);
}

void IbQpSet::appendReadiness(std::vector<pollfd>& fds) {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  unsigned events = 0;
  while (device_->api().get_cq_event(channel_, &cq, &context) == 0) ++events;
  if (events > 0) device_->api().ack_cq_events(cq_, events);
  if (found_while_arming_.empty() && cq_->context->ops.req_notify_cq(cq_, 0) == 0) {
    // A completion that came between the caller's last poll and the request raises no event: look once more.
    ibv_wc wc[16];
    int n;
    while ((n = cq_->context->ops.poll_cq(cq_, 16, wc)) > 0) {
      found_while_arming_.insert(found_while_arming_.end(), wc, wc + n);
    }
    if (found_while_arming_.empty()) {
      fds.push_back(pollfd{channel_->fd, POLLIN, 0});
      return;
    }
  }
  signalEventFd(found_fd_.get());
  fds.push_back(pollfd{found_fd_.get(), POLLIN, 0});
}

QpSetInfo IbQpSet::localInfo() const {
  QpSetInfo info{};
  info.count = static_cast<uint32_t>(qps_.size());
  for (size_t i = 0; i < qps_.size(); ++i) info.qpn[i] = qps_[i]->qp_num;
  info.psn = psn_;
  std::memcpy(info.gid, device_->gid().raw, 16);
  info.lid = device_->lid();
  info.mtu = device_->mtu();
  info.eager_bytes = ib_wire::kEagerBytes;
  return info;
}

Status IbQpSet::connect(const QpSetInfo& remote, const std::string& peer) {
  if (remote.count != qps_.size()) {
    return Status(ErrorCode::kMismatch, "ibverbs: " + peer + " has " + std::to_string(remote.count) +
                                            " queue pairs per connection, this side " + std::to_string(qps_.size()) +
                                            " (MEGASCALE_IB_QPS_PER_CONNECTION must agree)");
  }
  const VerbsApi& api = device_->api();
  for (size_t i = 0; i < qps_.size(); ++i) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = static_cast<ibv_mtu>(std::min<uint32_t>(remote.mtu, device_->mtu()));
    attr.dest_qp_num = remote.qpn[i];
    attr.rq_psn = remote.psn;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;  // 0.64 ms, as NCCL
    attr.ah_attr.is_global = routeGlobally(device_->infiniband(), settings_.route_global, device_->gid().raw, remote.gid);
    attr.ah_attr.dlid = static_cast<uint16_t>(remote.lid);
    attr.ah_attr.port_num = device_->port();
    attr.ah_attr.sl = static_cast<uint8_t>(settings_.service_level);
    std::memcpy(attr.ah_attr.grh.dgid.raw, remote.gid, 16);
    attr.ah_attr.grh.flow_label = flowLabelOf(qps_[0]->qp_num, remote.qpn[0], i);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_->gidIndex());
    attr.ah_attr.grh.hop_limit = 255;
    attr.ah_attr.grh.traffic_class = static_cast<uint8_t>(settings_.traffic_class);
    if (api.modify_qp(qps_[i], &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
      const std::string route = attr.ah_attr.is_global ? "GID index " + std::to_string(device_->gidIndex()) +
                                                             " (MEGASCALE_IB_GID_INDEX, MEGASCALE_IB_ROCE_VERSION)"
                                                       : "LID " + std::to_string(remote.lid);
      return Status(ErrorCode::kSystem, "ibverbs: queue pair to " + peer + " refused RTR (" + errnoText(errno) +
                                            ") through " + device_->name() + " to " + route);
    }
    attr = {};
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = psn_;
    attr.timeout = settings_.timeout;
    attr.retry_cnt = settings_.retry_cnt;
    attr.rnr_retry = 7;  // receives are posted ahead; an RNR wait is a slow peer, not a dead one
    attr.max_rd_atomic = 1;
    if (api.modify_qp(qps_[i], &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                          IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
      return Status(ErrorCode::kSystem, "ibverbs: queue pair to " + peer + " refused RTS");
    }
  }
  return Status::ok();
}

void IbQpSet::stopTraffic() {
  for (ibv_qp* qp : qps_) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    (void)device_->api().modify_qp(qp, &attr, IBV_QP_STATE);  // from any state; nothing to do if it fails
  }
}

}  // namespace megascale::transport
