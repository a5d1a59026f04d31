#include "transport/ibverbs/ib_transport.h"

#include <unistd.h>

#include <any>
#include <vector>

#include "transport/cuda_memory.h"
#include "transport/ibverbs/ib_comm.h"
#include "transport/net_transport.h"
#include "transport/oob_endpoints.h"

namespace megascale::transport {

namespace {

constexpr int kSendDepth = 4 * kMaxRequests;  // per message: the size, a part (or a few, beyond 1 GiB), a CTS
constexpr int kRecvDepth = kMaxRequests * kMaxRecvs;

size_t pageBytes() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Which devices and GID the transport's options (MEGASCALE_IB_HCA, MEGASCALE_IB_GID_INDEX, MEGASCALE_IB_ROCE_VERSION,
// MEGASCALE_IB_ADDR_FAMILY, MEGASCALE_IB_NICS_PER_RANK) pick.
IbSettings deviceSettings(const TransportOptions& options) {
  IbSettings settings;
  settings.hca = options.ib.hca;
  settings.gid_index = options.ib.gid_index;
  settings.roce_version = options.ib.roce_version;
  settings.ipv6 = options.ib.ipv6;
  settings.local_rank = options.ib.local_rank;
  settings.local_size = options.ib.local_size;
  settings.nics_per_rank = options.ib.nics_per_rank;
  return settings;
}

// The rank's NICs: the ports the options name (the NCCL plugin's device), else the nearest.
std::vector<std::shared_ptr<IbDevice>> openRails(const TransportOptions& options) {
  IbSettings settings = deviceSettings(options);
  const std::vector<int> ports = options.ib.ports.empty() ? IbDevice::nearestPorts(settings) : options.ib.ports;
  if (ports.size() > static_cast<size_t>(kMaxRails)) {
    throw Error(ErrorCode::kInvalidArgument, "ibverbs: " + std::to_string(ports.size()) + " NICs for one transport (at most " +
                                                 std::to_string(kMaxRails) + ")");
  }
  std::vector<std::shared_ptr<IbDevice>> rails;
  for (int port : ports) {
    settings.port_index = port;
    rails.push_back(IbDevice::shared(settings));
  }
  return rails;
}

}  // namespace

IbTransport::IbTransport(const TransportOptions& options) : options_(options) {
  rails_ = openRails(options);
  const IbDevice& first = *rails_.front();
  qp_settings_.qps = options.ib.qps_per_connection;
  qp_settings_.traffic_class = options.ib.traffic_class >= 0 ? options.ib.traffic_class
                               : options.traffic_class >= 0  ? options.traffic_class
                                                             : 0;
  qp_settings_.service_level = options.ib.service_level;
  qp_settings_.route_global = options.ib.route_global;
  qp_settings_.timeout = static_cast<uint8_t>(options.ib.timeout);
  qp_settings_.retry_cnt = static_cast<uint8_t>(options.ib.retry_cnt);
  properties_.name = "ibverbs";
  for (const auto& rail : rails_) properties_.speed_gbps += rail->speedGbps();
  properties_.latency_us = 2;
  properties_.max_recvs = kMaxRecvs;
  properties_.one_sided_write = true;
  properties_.dma_buf = first.api().reg_dmabuf_mr != nullptr;
  const CudaDriver& cuda = CudaDriver::get();
  if (CudaDriver::builtWithCuda() && properties_.dma_buf && cuda.available() && cuda.dmaBufSupported()) {
    properties_.pointer_kinds |= kDevicePointer;
  }
  properties_.nic = NicInfo{first.name(), first.pciPath(), first.ipv4(), first.nodeGuid(), first.port()};
  std::string nics;
  for (const auto& rail : rails_) nics += (nics.empty() ? "" : ", ") + rail->name() + " port " + std::to_string(rail->port());
  properties_.lanes = std::to_string(qp_settings_.qps * static_cast<int>(rails_.size())) +
                      " queue pair(s) per connection over " + nics +
                      (options.device_memory_receives ? ", no eager sends" : "");
}

bool IbTransport::deviceAvailable() {
  try {
    return !openRails(transportOptionsFromConfig()).empty();
  } catch (const Error&) {
    return false;  // no libibverbs, no device, or a knob that matches none: auto leaves ibverbs out
  }
}

int IbTransport::nicCount(const TransportOptions& options) {
  return IbDevice::activePortCount(deviceSettings(options));
}

std::unique_ptr<Listener> IbTransport::listen() {
  const std::vector<std::shared_ptr<IbDevice>> rails = rails_;
  const IbQpSettings qp_settings = qp_settings_;
  const bool eager_off = options_.device_memory_receives;
  return std::make_unique<OobListener>(
      options_, "ibverbs",
      [rails, qp_settings, eager_off](const OobRequest& request, std::string* reply, std::any* state) {
        QpSetInfo remote;
        MSC_RETURN_IF_ERROR(QpSetInfo::decode(request.blob, &remote));
        std::shared_ptr<IbQpSet> qps;
        try {
          // As many queue pairs as the sender made, over this side's NICs.
          qps = std::make_shared<IbQpSet>(rails, qp_settings, kSendDepth, kRecvDepth, static_cast<int>(remote.count));
        } catch (const Error& e) {
          return Status(e.code(), e.what());
        }
        MSC_RETURN_IF_ERROR(qps->connect(remote, request.peer));
        QpSetInfo local = qps->localInfo();
        if (eager_off) local.eager_bytes = 0;  // no bounce buffer may stand in for device memory
        *reply = local.encode();
        *state = qps;
        return Status::ok();
      },
      [](OobAccepted& a) {
        return std::make_unique<IbRecvComm>(std::any_cast<std::shared_ptr<IbQpSet>>(a.state), std::move(a.link));
      });
}

std::unique_ptr<Connector> IbTransport::connect(const Address& address, uint64_t local_id) {
  const sockaddr_in to = oobAddressOf(address, "ibverbs");
  auto qps = std::make_shared<IbQpSet>(rails_, qp_settings_, kSendDepth, kRecvDepth);
  const std::string blob = qps->localInfo().encode();
  return std::make_unique<OobConnector>(
      options_, to, local_id, blob,
      [qps](OobLink link, const std::string& answer, std::unique_ptr<SendComm>* comm) mutable {
        QpSetInfo remote;
        MSC_RETURN_IF_ERROR(QpSetInfo::decode(answer, &remote));
        MSC_RETURN_IF_ERROR(qps->connect(remote, link.peer()));
        // The comm holds the only reference: its queue pairs go before the buffers it registered.
        *comm = std::make_unique<IbSendComm>(std::move(qps), std::move(link), remote.eager_bytes);
        return Status::ok();
      });
}

Status IbTransport::registerMemory(void* data, size_t size, PointerKind kind, MemoryRegion* mr) {
  if (kind == kDevicePointer && !(properties_.pointer_kinds & kDevicePointer)) {
    const CudaDriver& cuda = CudaDriver::get();
    const IbDevice& first = *rails_.front();
    return Status(ErrorCode::kUnavailable,
                  "ibverbs: cannot register device memory on " + first.name() + ": " +
                      (!CudaDriver::builtWithCuda() ? std::string("this build has no CUDA support")
                       : first.api().reg_dmabuf_mr == nullptr
                           ? std::string("libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34 or newer is needed)")
                           : cuda.why()));
  }
  MSC_RETURN_IF_ERROR(Transport::registerMemory(data, size, kind, mr));
  if (size == 0) return Status::ok();  // nothing to reach: transfers of no bytes need no registration
  const PageRange pages = pageRangeFor(reinterpret_cast<uintptr_t>(data), size, pageBytes());
  if (kind == kDevicePointer) {
    int fd = -1;
    MSC_RETURN_IF_ERROR(CudaDriver::get().exportDmaBuf(pages, &fd));
    Status s = registerDmaBuf(data, size, fd, pages.offset, mr);
    close(fd);  // the registrations hold their own references to the buffer
    return s;
  }
  // Whole pages: a later registration of a neighbouring buffer on the same pages shares this one.
  return registerOnEveryRail(pages.begin, pages.bytes, false, mr, [](IbDevice& device, uintptr_t begin, size_t bytes) {
    return device.api().reg_mr(device.pd(), reinterpret_cast<void*>(begin), bytes, kRegistrationAccess);
  });
}

uint64_t IbTransport::registrationsMade() const {
  uint64_t made = 0;
  for (const auto& rail : rails_) made += rail->registrations().made();
  return made;
}

Status IbTransport::registerDmaBuf(void* data, size_t size, int fd, uint64_t offset, MemoryRegion* mr) {
  if (rails_.front()->api().reg_dmabuf_mr == nullptr) {
    return Status(ErrorCode::kUnavailable, "ibverbs: libibverbs has no ibv_reg_dmabuf_mr (rdma-core 34 or newer)");
  }
  if (size == 0) return Status(ErrorCode::kInvalidArgument, "ibverbs: registering an empty dma-buf range");
  MSC_RETURN_IF_ERROR(registerOnEveryRail(reinterpret_cast<uintptr_t>(data), size, true, mr,
                                          [&](IbDevice& device, uintptr_t begin, size_t bytes) {
                                            return device.api().reg_dmabuf_mr(device.pd(), offset, bytes, begin, fd,
                                                                              kRegistrationAccess);
                                          }));
  mr->base = data;
  mr->size = size;
  mr->kind = kDevicePointer;
  return Status::ok();
}

Status IbTransport::registerOnEveryRail(uintptr_t begin, size_t bytes, bool device_memory, MemoryRegion* mr,
                                        const RailRegister& make) {
  auto registration = std::make_unique<IbRegistration>();
  for (const auto& rail : rails_) {
    ibv_mr* made = nullptr;
    Status s = rail->registrations().acquire(
        begin, begin + bytes, device_memory,
        [&](uintptr_t b, size_t n) { return make(*rail, b, n); }, &made);
    if (!s.isOk()) {
      releaseOnEveryRail(*registration);
      return s;
    }
    registration->mr[static_cast<size_t>(registration->rails++)] = made;
  }
  mr->handle = registration.release();
  return Status::ok();
}

void IbTransport::releaseOnEveryRail(const IbRegistration& registration) {
  for (int r = 0; r < registration.rails; ++r) {
    rails_[static_cast<size_t>(r)]->registrations().release(registration.mr[static_cast<size_t>(r)]);
  }
}

void IbTransport::deregisterMemory(MemoryRegion* mr) {
  if (mr->handle == nullptr) return;
  std::unique_ptr<IbRegistration> registration(static_cast<IbRegistration*>(mr->handle));
  releaseOnEveryRail(*registration);
  mr->handle = nullptr;
}

}  // namespace megascale::transport
