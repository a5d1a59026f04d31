#include "transport/ibverbs/ib_device.h"

#include <arpa/inet.h>
#include <limits.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>

#include "common/log.h"
#include "common/process_shared.h"
#include "common/status.h"
#include "transport/cuda_memory.h"
#include "transport/ibverbs/hca_list.h"
#include "transport/ibverbs/ib_wire.h"
#include "transport/ibverbs/nic_locality.h"

namespace megascale::transport {

namespace {

GidType gidTypeOf(uint32_t verbs_type) {
  return verbs_type == IBV_GID_TYPE_IB ? GidType::kInfiniBand
         : verbs_type == IBV_GID_TYPE_ROCE_V1 ? GidType::kRoceV1
                                              : GidType::kRoceV2;
}

// Gb/s from the port's width and per-lane speed codes (IB spec: width 1/2/4/8/16 = 1x/4x/8x/12x/2x).
double portGbps(const ibv_port_attr& a) {
  double lanes = a.active_width == 1 ? 1 : a.active_width == 2 ? 4 : a.active_width == 4 ? 8 : a.active_width == 8 ? 12 : 2;
  double lane = 2.5;
  switch (a.active_speed) {
    case 2: lane = 5; break;
    case 4: case 8: lane = 10; break;
    case 16: lane = 14; break;
    case 32: lane = 25; break;
    case 64: lane = 50; break;
    case 128: lane = 100; break;
    default: break;
  }
  return lanes * lane;
}

// rdma-core's sysfs directory for the device (/sys/class/infiniband/<name>); its `device` link is the PCI
// function. Empty for a device without one (the emulated device).
std::string pciPathOf(const ibv_device* device) {
  char resolved[PATH_MAX];
  const std::string link = std::string(device->ibdev_path) + "/device";
  return realpath(link.c_str(), resolved) != nullptr ? resolved : "";
}

// Where this rank runs: the GPU its local rank drives (one per rank, by ordinal among those visible), and the
// NUMA nodes of the CPUs it may run on.
RankLocality rankLocality(int local_rank) {
  RankLocality rank;
  rank.local_rank = local_rank;
  const std::vector<std::string>& gpus = CudaDriver::get().gpuBusIds();
  if (!gpus.empty()) {
    const size_t ordinal = local_rank >= 0 ? static_cast<size_t>(local_rank) % gpus.size() : 0;
    rank.gpu_pci_path = pciPathOfBusId(gpus[ordinal]);
    rank.gpu_numa_node = numaNodeOfPciPath(rank.gpu_pci_path);
  }
  rank.cpu_numa_nodes = allowedNumaNodes();
  return rank;
}

// The host's device list, freed on every way out.
class DeviceList {
 public:
  explicit DeviceList(const VerbsApi& api) : api_(api), list_(api.get_device_list(&count_)) {}
  ~DeviceList() {
    if (list_ != nullptr) api_.free_device_list(list_);
  }
  DeviceList(const DeviceList&) = delete;
  DeviceList& operator=(const DeviceList&) = delete;
  int count() const { return list_ == nullptr ? 0 : count_; }
  ibv_device* operator[](int i) const { return list_[i]; }

 private:
  const VerbsApi& api_;
  int count_ = 0;
  ibv_device** list_;
};

// An active port MEGASCALE_IB_HCA takes.
struct Candidate {
  int device;
  int port;
};

// Every active port the list takes, in device and port order: the host's rails. `seen` gets every device and
// port with why it was passed over.
std::vector<Candidate> activePorts(const VerbsApi& api, const DeviceList& list, const IbSettings& settings,
                                   std::string* seen) {
  const HcaList wanted = HcaList::parse(settings.hca);
  std::vector<Candidate> candidates;
  for (int i = 0; i < list.count(); ++i) {
    const char* name = api.get_device_name(list[i]);
    *seen += (seen->empty() ? "" : ", ") + std::string(name);
    ibv_context* context = api.open_device(list[i]);
    if (context == nullptr) {
      *seen += " (cannot open)";
      continue;
    }
    ibv_device_attr device_attr{};
    const int ports = api.query_device(context, &device_attr) == 0 ? device_attr.phys_port_cnt : 1;
    for (int p = 1; p <= ports; ++p) {
      const std::string where = " (port " + std::to_string(p);
      ibv_port_attr port{};
      if (!wanted.selects(name, p)) {
        *seen += where + " not in MEGASCALE_IB_HCA)";
      } else if (api.query_port(context, static_cast<uint8_t>(p), &port) != 0 || port.state != IBV_PORT_ACTIVE) {
        *seen += where + " not active)";
      } else {
        candidates.push_back(Candidate{i, p});
      }
    }
    api.close_device(context);
  }
  return candidates;
}

}  // namespace

std::shared_ptr<IbDevice> IbDevice::shared(const IbSettings& settings) {
  static std::mutex lock;
  static std::map<int, ProcessShared<IbDevice>> devices;
  ProcessShared<IbDevice>* slot;
  {
    std::lock_guard<std::mutex> guard(lock);
    slot = &devices[settings.port_index];
  }
  return slot->get([&] { return std::shared_ptr<IbDevice>(new IbDevice(loadVerbs(), settings)); });
}

int IbDevice::activePortCount(const IbSettings& settings) {
  const VerbsApi& api = loadVerbs();
  DeviceList list(api);
  std::string seen;
  return static_cast<int>(activePorts(api, list, settings, &seen).size());
}

std::vector<int> IbDevice::nearestPorts(const IbSettings& settings) {
  const VerbsApi& api = loadVerbs();
  DeviceList list(api);
  std::string seen;
  if (list.count() == 0) {
    throw Error(ErrorCode::kUnavailable, "ibverbs: no RDMA device on this host (libibverbs lists none)");
  }
  const std::vector<Candidate> candidates = activePorts(api, list, settings, &seen);
  if (candidates.empty()) {
    throw Error(ErrorCode::kUnavailable, "ibverbs: no device with an active port matches MEGASCALE_IB_HCA='" +
                                             settings.hca + "' (found: " + seen + ")");
  }
  // The ports nearest the rank's GPU (else its CPUs); a host's ranks spread over ports equally near, so with no
  // locality to go by local rank r takes port r mod the ports (rail r for as many ranks as rails, MegaScale's
  // and every GPU cluster's layout). A host with more ports than ranks gives each rank as many as divide evenly.
  size_t count = settings.nics_per_rank > 0 ? static_cast<size_t>(settings.nics_per_rank)
                 : settings.local_size > 0  ? candidates.size() / static_cast<size_t>(settings.local_size)
                                            : 1;
  count = std::clamp<size_t>(count, 1, std::min<size_t>(candidates.size(), kMaxRails));
  PortChoice choice;
  if (candidates.size() == count) {
    for (size_t i = 0; i < count; ++i) choice.indices.push_back(i);
    choice.basis = count == 1 ? "the only one" : "all of them";
  } else {
    std::vector<PortLocality> localities;
    for (const Candidate& c : candidates) {
      PortLocality l;
      l.pci_path = pciPathOf(list[c.device]);
      l.numa_node = numaNodeOfPciPath(l.pci_path);
      localities.push_back(l);
    }
    choice = choosePorts(localities, rankLocality(settings.local_rank), count);
  }
  std::string numbers, names;
  std::vector<int> ports;
  for (size_t i : choice.indices) {
    const Candidate& c = candidates[i];
    numbers += (numbers.empty() ? "" : "+") + std::to_string(i + 1);
    names += (names.empty() ? "" : ", ") + std::string(api.get_device_name(list[c.device])) + " port " +
             std::to_string(c.port);
    ports.push_back(static_cast<int>(i));
  }
  MSC_LOG_INFO("ibverbs: local rank %d takes active port%s %s of %zu (%s): %s", settings.local_rank,
               ports.size() > 1 ? "s" : "", numbers.c_str(), candidates.size(), names.c_str(), choice.basis.c_str());
  return ports;
}

IbDevice::IbDevice(const VerbsApi& api, const IbSettings& settings) : api_(&api) {
  DeviceList list(api);
  if (list.count() == 0) {
    throw Error(ErrorCode::kUnavailable, "ibverbs: no RDMA device on this host (libibverbs lists none)");
  }
  std::string seen;
  const std::vector<Candidate> candidates = activePorts(api, list, settings, &seen);
  if (candidates.empty()) {
    throw Error(ErrorCode::kUnavailable, "ibverbs: no device with an active port matches MEGASCALE_IB_HCA='" +
                                             settings.hca + "' (found: " + seen + ")");
  }
  if (settings.port_index < 0 || settings.port_index >= static_cast<int>(candidates.size())) {
    throw Error(ErrorCode::kInvalidArgument, "ibverbs: port index " + std::to_string(settings.port_index) +
                                                 " asked for, but " + std::to_string(candidates.size()) +
                                                 " active ports match MEGASCALE_IB_HCA (found: " + seen + ")");
  }
  const Candidate chosen = candidates[static_cast<size_t>(settings.port_index)];
  const std::string name = api.get_device_name(list[chosen.device]);  // a copy: the list is freed first
  ibv_context* context = api.open_device(list[chosen.device]);
  ibv_port_attr port{};
  if (context == nullptr || api.query_port(context, static_cast<uint8_t>(chosen.port), &port) != 0) {
    if (context != nullptr) api.close_device(context);
    throw Error(ErrorCode::kUnavailable, "ibverbs: " + name + " port " + std::to_string(chosen.port) +
                                             " went away while it was being opened");
  }
  const Status taken = takePort(api, list[chosen.device], context, name, chosen.port, port, settings);
  if (!taken.isOk()) {
    api.close_device(context);
    throw Error(taken.code(), taken.message());
  }
  pd_ = api.alloc_pd(context_);
  if (pd_ == nullptr) {
    api.close_device(context_);
    throw Error(ErrorCode::kSystem, "ibverbs: " + name_ + ": ibv_alloc_pd failed");
  }
  registrations_ = std::make_unique<RegistrationCache>(api, name_);
}

Status IbDevice::takePort(const VerbsApi& api, ibv_device* device, ibv_context* context, const std::string& name,
                          int port_number, const ibv_port_attr& port, const IbSettings& settings) {
  const bool infiniband = port.link_layer == IBV_LINK_LAYER_INFINIBAND;
  GidEntry chosen;
  MSC_RETURN_IF_ERROR(chooseGid(gidTable(api, device, context, port_number, port.gid_tbl_len),
                                GidPreference{settings.gid_index, settings.roce_version, settings.ipv6}, infiniband,
                                name + " port " + std::to_string(port_number), &chosen));
  context_ = context;
  name_ = name;
  port_ = static_cast<uint8_t>(port_number);
  describe(api, device, context);
  mtu_ = port.active_mtu;
  speed_gbps_ = portGbps(port);
  gid_index_ = chosen.index;
  infiniband_ = infiniband;
  lid_ = port.lid;
  std::memcpy(gid_.raw, chosen.raw.data(), sizeof(gid_.raw));
  if (chosen.ipv4Mapped()) {
    char text[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, gid_.raw + 12, text, sizeof(text)) != nullptr) ipv4_ = text;
  }
  MSC_LOG_INFO("ibverbs: %s port %d (%s%s): GID index %d, %s %s", name_.c_str(), port_number,
               infiniband ? "InfiniBand, LID " : "Ethernet", infiniband ? std::to_string(lid_).c_str() : "", gid_index_,
               gidTypeName(chosen.type), chosen.address().c_str());
  return Status::ok();
}

std::vector<GidEntry> IbDevice::gidTable(const VerbsApi& api, ibv_device* device, ibv_context* context,
                                         int port_number, int length) const {
  std::vector<GidEntry> table;
  for (int g = 0; g < length; ++g) {
    GidEntry e;
    e.index = g;
    ibv_gid_entry ex{};
    if (api.query_gid_ex != nullptr &&
        api.query_gid_ex(context, static_cast<uint32_t>(port_number), static_cast<uint32_t>(g), &ex, 0, sizeof(ex)) == 0) {
      std::memcpy(e.raw.data(), ex.gid.raw, e.raw.size());
      e.type = gidTypeOf(ex.gid_type);
      table.push_back(e);
      continue;
    }
    ibv_gid gid{};
    if (api.query_gid_ex != nullptr || api.query_gid(context, static_cast<uint8_t>(port_number), g, &gid) != 0) {
      continue;  // an empty slot
    }
    std::memcpy(e.raw.data(), gid.raw, e.raw.size());
    // Without the extended query: the type from sysfs; a port that cannot say is taken as RoCE v2 (the only
    // type rdma-core reported before it listed types).
    std::ifstream types(std::string(device->ibdev_path) + "/ports/" + std::to_string(port_number) +
                        "/gid_attrs/types/" + std::to_string(g));
    std::string text;
    std::getline(types, text);
    if (!parseGidTypeText(text, &e.type)) e.type = GidType::kRoceV2;
    table.push_back(e);
  }
  return table;
}

void IbDevice::describe(const VerbsApi& api, ibv_device* device, ibv_context* context) {
  ibv_device_attr attr{};
  if (api.query_device(context, &attr) == 0) node_guid_ = attr.node_guid;
  pci_path_ = pciPathOf(device);
}

IbDevice::~IbDevice() {
  registrations_.reset();  // before the protection domain its registrations belong to
  api_->dealloc_pd(pd_);
  api_->close_device(context_);
}

}  // namespace megascale::transport
