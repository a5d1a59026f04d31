#include "transport/ibverbs/ib_transport.h"

#include <any>
#include <deque>
#include <vector>

#include "transport/ibverbs/ib_comm.h"
#include "transport/oob_link.h"

namespace megascale::transport {

namespace {

constexpr char kAddressPrefix[] = "ibverbs:";
constexpr int kSendDepth = 4 * kMaxRequests;  // per message: the size, a part (or a few, beyond 1 GiB), a CTS
constexpr int kRecvDepth = kMaxRequests * kMaxRecvs;

class IbListener : public Listener {
 public:
  IbListener(std::shared_ptr<IbDevice> device, const TransportOptions& options, const IbQpSettings& qp_settings)
      : device_(std::move(device)), qp_settings_(qp_settings), server_(options, "ibverbs"),
        address_(Address::fromString(kAddressPrefix + formatAddress(server_.bound()))) {}

  const Address& address() const override { return address_; }

  Status accept(std::unique_ptr<RecvComm>* comm) override {
    std::vector<OobAccepted> accepted;
    server_.poll(
        [this](const OobRequest& request, std::string* reply, std::any* state) {
          QpSetInfo remote;
          MSC_RETURN_IF_ERROR(QpSetInfo::decode(request.blob, &remote));
          std::shared_ptr<IbQpSet> qps;
          try {
            qps = std::make_shared<IbQpSet>(device_, qp_settings_, kSendDepth, kRecvDepth);
          } catch (const Error& e) {
            return Status(e.code(), e.what());
          }
          MSC_RETURN_IF_ERROR(qps->connect(remote, request.peer));
          *reply = qps->localInfo().encode();
          *state = qps;
          return Status::ok();
        },
        &accepted);
    for (OobAccepted& a : accepted) {
      try {
        ready_.push_back(std::make_unique<IbRecvComm>(std::any_cast<std::shared_ptr<IbQpSet>>(a.state), std::move(a.link)));
      } catch (const Error& e) {
        return Status(e.code(), e.what());
      }
    }
    if (!ready_.empty()) {
      *comm = std::move(ready_.front());
      ready_.pop_front();
    }
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override { return server_.appendReadiness(fds); }

 private:
  std::shared_ptr<IbDevice> device_;
  IbQpSettings qp_settings_;
  OobServer server_;
  Address address_;
  std::deque<std::unique_ptr<RecvComm>> ready_;
};

class IbConnector : public Connector {
 public:
  IbConnector(std::shared_ptr<IbQpSet> qps, const TransportOptions& options, const sockaddr_in& address,
              uint64_t local_id)
      : qps_(std::move(qps)), dial_(options, address, local_id, qps_->localInfo().encode()) {}

  Status poll(std::unique_ptr<SendComm>* comm) override {
    bool done = false;
    MSC_RETURN_IF_ERROR(dial_.poll(&done));
    if (!done) return Status::ok();
    OobLink link = dial_.release();
    QpSetInfo remote;
    MSC_RETURN_IF_ERROR(QpSetInfo::decode(dial_.answer(), &remote));
    MSC_RETURN_IF_ERROR(qps_->connect(remote, link.peer()));
    try {
      *comm = std::make_unique<IbSendComm>(std::move(qps_), std::move(link));
    } catch (const Error& e) {
      return Status(e.code(), e.what());
    }
    return Status::ok();
  }

  bool appendReadiness(std::vector<pollfd>& fds) const override { return dial_.appendReadiness(fds); }

 private:
  std::shared_ptr<IbQpSet> qps_;
  OobDial dial_;
};

}  // namespace

IbTransport::IbTransport(const TransportOptions& options) : options_(options) {
  IbSettings settings;
  settings.hca = options.ib_hca;
  settings.gid_index = options.ib_gid_index;
  device_ = IbDevice::shared(settings);
  qp_settings_.qps = options.ib_qps_per_connection;
  qp_settings_.traffic_class = options.ib_traffic_class >= 0 ? options.ib_traffic_class
                               : options.traffic_class >= 0  ? options.traffic_class
                                                             : 0;
  qp_settings_.service_level = options.ib_service_level;
  qp_settings_.timeout = static_cast<uint8_t>(options.ib_timeout);
  qp_settings_.retry_cnt = static_cast<uint8_t>(options.ib_retry_cnt);
  properties_.name = "ibverbs";
  properties_.speed_gbps = device_->speedGbps();
  properties_.latency_us = 2;
  properties_.max_recvs = kMaxRecvs;
  properties_.one_sided_write = true;
}

std::unique_ptr<Listener> IbTransport::listen() {
  return std::make_unique<IbListener>(device_, options_, qp_settings_);
}

std::unique_ptr<Connector> IbTransport::connect(const Address& address, uint64_t local_id) {
  std::string text = address.asString();
  if (text.rfind(kAddressPrefix, 0) != 0) {
    throw Error(ErrorCode::kInvalidArgument, "ibverbs connect: '" + text + "' is not an ibverbs transport address");
  }
  auto qps = std::make_shared<IbQpSet>(device_, qp_settings_, kSendDepth, kRecvDepth);
  return std::make_unique<IbConnector>(std::move(qps), options_, parseHostPort(text.substr(sizeof(kAddressPrefix) - 1)),
                                       local_id);
}

Status IbTransport::registerMemory(void* data, size_t size, PointerKind kind, MemoryRegion* mr) {
  MSC_RETURN_IF_ERROR(Transport::registerMemory(data, size, kind, mr));
  TransferRegistration registration;
  MSC_RETURN_IF_ERROR(TransferRegistration::make(*device_, data, size, nullptr, &registration));
  mr->handle = registration.release();  // the caller's until deregisterMemory
  return Status::ok();
}

void IbTransport::deregisterMemory(MemoryRegion* mr) {
  if (mr->handle != nullptr) {
    std::lock_guard<std::mutex> guard(device_->registrationLock());
    device_->api().dereg_mr(static_cast<ibv_mr*>(mr->handle));
  }
  mr->handle = nullptr;
}

}  // namespace megascale::transport
