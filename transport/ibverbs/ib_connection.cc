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
  bool valid = info->count >= 1 && info->count <= static_cast<uint32_t>(kMaxRails * kMaxQpsPerConnection) &&
               info->rails >= 1 && info->rails <= static_cast<uint32_t>(kMaxRails) &&
               info->eager_bytes <= ib_wire::kEagerBytes;
  for (uint32_t r = 0; valid && r < info->rails; ++r) {
    const RailAddress& a = info->rail[r];
    valid = a.mtu >= IBV_MTU_256 && a.mtu <= IBV_MTU_4096 && a.lid <= 0xffff;
  }
  if (!valid) {
    return Status(ErrorCode::kPeerLost, "ibverbs: a malformed queue pair description (" + std::to_string(info->count) +
                                            " queue pairs over " + std::to_string(info->rails) +
                                            " NICs, an eager limit of " + std::to_string(info->eager_bytes) +
                                            " bytes, or a bad MTU or LID)");
  }
  return Status::ok();
}

IbQpSet::IbQpSet(std::vector<std::shared_ptr<IbDevice>> rails, const IbQpSettings& settings, int send_depth,
                 int recv_depth, int count)
    : devices_(std::move(rails)), settings_(settings) {
  if (devices_.empty() || devices_.size() > static_cast<size_t>(kMaxRails)) {
    throw Error(ErrorCode::kInvalidArgument, "ibverbs: a connection over " + std::to_string(devices_.size()) +
                                                 " NICs (1.." + std::to_string(kMaxRails) + ")");
  }
  const int per_rail = std::clamp(settings.qps, 1, kMaxQpsPerConnection);
  const int n = std::clamp(count > 0 ? count : per_rail * static_cast<int>(devices_.size()), 1,
                           kMaxRails * kMaxQpsPerConnection);
  found_fd_ = Fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  for (const auto& device : devices_) {
    Rail& rail = rails_.emplace_back();
    rail.device = device;
    const VerbsApi& api = device->api();
    rail.channel = api.create_comp_channel(device->context());
    if (rail.channel == nullptr) throw Error(ErrorCode::kSystem, "ibverbs: " + device->name() + ": no completion channel");
    // Events are taken without waiting.
    fcntl(rail.channel->fd, F_SETFL, fcntl(rail.channel->fd, F_GETFL) | O_NONBLOCK);
    const int on_rail = (n + static_cast<int>(devices_.size()) - 1) / static_cast<int>(devices_.size());
    rail.cq = api.create_cq(device->context(), on_rail * (send_depth + recv_depth), nullptr, rail.channel, 0);
    if (rail.cq == nullptr) throw Error(ErrorCode::kSystem, "ibverbs: " + device->name() + ": ibv_create_cq failed");
  }
  randomBytes(&psn_, sizeof(psn_));
  psn_ &= 0xffffff;
  for (int i = 0; i < n; ++i) {
    const Rail& rail = rails_[static_cast<size_t>(railOf(i))];
    IbDevice& device = *rail.device;
    ibv_qp_init_attr init{};
    init.send_cq = rail.cq;
    init.recv_cq = rail.cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = static_cast<uint32_t>(send_depth);
    init.cap.max_recv_wr = static_cast<uint32_t>(recv_depth);
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ibv_qp* qp = device.api().create_qp(device.pd(), &init);
    if (qp == nullptr) throw Error(ErrorCode::kSystem, "ibverbs: " + device.name() + ": ibv_create_qp failed");
    qps_.push_back(qp);
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = device.port();
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (device.api().modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
      throw Error(ErrorCode::kSystem, "ibverbs: " + device.name() + ": a queue pair refused INIT");
    }
  }
}

IbQpSet::~IbQpSet() {
  for (size_t i = 0; i < qps_.size(); ++i) device(railOf(static_cast<int>(i))).api().destroy_qp(qps_[i]);
  for (Rail& rail : rails_) {
    if (rail.cq != nullptr) rail.device->api().destroy_cq(rail.cq);
    if (rail.channel != nullptr) rail.device->api().destroy_comp_channel(rail.channel);
  }
}

int IbQpSet::poll(int max, ibv_wc* out, int* rail) {
  bool found_left = false;
  for (size_t r = 0; r < rails_.size(); ++r) {
    std::vector<ibv_wc>& found = rails_[r].found_while_arming;
    if (found.empty()) continue;
    const int n = std::min<int>(max, static_cast<int>(found.size()));
    std::copy(found.begin(), found.begin() + n, out);
    found.erase(found.begin(), found.begin() + n);
    for (const Rail& other : rails_) found_left = found_left || !other.found_while_arming.empty();
    if (!found_left) {
      uint64_t count;
      (void)!read(found_fd_.get(), &count, sizeof(count));
    }
    *rail = static_cast<int>(r);
    return n;
  }
  for (size_t r = 0; r < rails_.size(); ++r) {
    ibv_cq* cq = rails_[r].cq;
    const int n = cq->context->ops.poll_cq(cq, max, out);
    *rail = static_cast<int>(r);
    if (n != 0) return n;
  }
  return 0;
}

bool IbQpSet::arm(Rail& rail) {
  const VerbsApi& api = rail.device->api();
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  unsigned events = 0;
  while (api.get_cq_event(rail.channel, &cq, &context) == 0) ++events;
  if (events > 0) api.ack_cq_events(rail.cq, events);
  if (rail.found_while_arming.empty() && rail.cq->context->ops.req_notify_cq(rail.cq, 0) == 0) {
    // A completion that came between the caller's last poll and the request raises no event: look once more.
    ibv_wc wc[16];
    int n;
    while ((n = rail.cq->context->ops.poll_cq(rail.cq, 16, wc)) > 0) {
      rail.found_while_arming.insert(rail.found_while_arming.end(), wc, wc + n);
    }
  }
  return rail.found_while_arming.empty();
}

void IbQpSet::appendReadiness(std::vector<pollfd>& fds) {
  bool all_armed = true;
  for (Rail& rail : rails_) all_armed = arm(rail) && all_armed;
  if (all_armed) {
    for (const Rail& rail : rails_) fds.push_back(pollfd{rail.channel->fd, POLLIN, 0});
    return;
  }
  signalEventFd(found_fd_.get());
  fds.push_back(pollfd{found_fd_.get(), POLLIN, 0});
}

QpSetInfo IbQpSet::localInfo() const {
  QpSetInfo info{};
  info.count = static_cast<uint32_t>(qps_.size());
  info.rails = static_cast<uint32_t>(rails_.size());
  for (size_t i = 0; i < qps_.size(); ++i) info.qpn[i] = qps_[i]->qp_num;
  info.psn = psn_;
  for (size_t r = 0; r < rails_.size(); ++r) {
    const IbDevice& device = *rails_[r].device;
    std::memcpy(info.rail[r].gid, device.gid().raw, 16);
    info.rail[r].lid = device.lid();
    info.rail[r].mtu = device.mtu();
  }
  info.eager_bytes = ib_wire::kEagerBytes;
  return info;
}

Status IbQpSet::connect(const QpSetInfo& remote, const std::string& peer) {
  if (remote.count != qps_.size()) {
    return Status(ErrorCode::kMismatch, "ibverbs: " + peer + " has " + std::to_string(remote.count) +
                                            " queue pairs per connection, this side " + std::to_string(qps_.size()) +
                                            " (MEGASCALE_IB_QPS_PER_CONNECTION must agree)");
  }
  remote_rails_ = static_cast<int>(remote.rails);
  for (size_t i = 0; i < qps_.size(); ++i) {
    IbDevice& local = device(railOf(static_cast<int>(i)));
    const RailAddress& to = remote.rail[remoteRailOf(static_cast<int>(i))];
    const VerbsApi& api = local.api();
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = static_cast<ibv_mtu>(std::min<uint32_t>(to.mtu, local.mtu()));
    attr.dest_qp_num = remote.qpn[i];
    attr.rq_psn = remote.psn;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;  // 0.64 ms, as NCCL
    attr.ah_attr.is_global = routeGlobally(local.infiniband(), settings_.route_global, local.gid().raw, to.gid);
    attr.ah_attr.dlid = static_cast<uint16_t>(to.lid);
    attr.ah_attr.port_num = local.port();
    attr.ah_attr.sl = static_cast<uint8_t>(settings_.service_level);
    std::memcpy(attr.ah_attr.grh.dgid.raw, to.gid, 16);
    attr.ah_attr.grh.flow_label = flowLabelOf(qps_[0]->qp_num, remote.qpn[0], i);
    attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(local.gidIndex());
    attr.ah_attr.grh.hop_limit = 255;
    attr.ah_attr.grh.traffic_class = static_cast<uint8_t>(settings_.traffic_class);
    if (api.modify_qp(qps_[i], &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
      const std::string route = attr.ah_attr.is_global ? "GID index " + std::to_string(local.gidIndex()) +
                                                             " (MEGASCALE_IB_GID_INDEX, MEGASCALE_IB_ROCE_VERSION)"
                                                       : "LID " + std::to_string(to.lid);
      return Status(ErrorCode::kSystem, "ibverbs: queue pair to " + peer + " refused RTR (" + errnoText(errno) +
                                            ") through " + local.name() + " to " + route);
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
      return Status(ErrorCode::kSystem, "ibverbs: queue pair to " + peer + " refused RTS through " + local.name());
    }
  }
  return Status::ok();
}

void IbQpSet::stopTraffic() {
  for (size_t i = 0; i < qps_.size(); ++i) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_ERR;
    // From any state; nothing to do if it fails.
    (void)device(railOf(static_cast<int>(i))).api().modify_qp(qps_[i], &attr, IBV_QP_STATE);
  }
}

}  // namespace megascale::transport
