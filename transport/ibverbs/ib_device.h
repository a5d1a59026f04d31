// The RDMA device the ibverbs transport uses in this process: opened once and shared by every transport, comm
// and queue pair (a protection domain per device, as NCCL keeps one), with the port's attributes and the GID
// queue pairs address each other by.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/ibverbs/gid_choice.h"
#include "transport/ibverbs/registration_cache.h"
#include "transport/ibverbs/verbs_api.h"

namespace megascale::transport {

/// What every registration allows: local writes (receives), remote writes (the peer's RDMA writes) and
/// remote reads (flushes, RDMA READ).
constexpr int kRegistrationAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

struct IbSettings {
  std::string hca;       // MEGASCALE_IB_HCA: NCCL_IB_HCA syntax (hca_list.h); the first active port it takes
  int gid_index = -1;    // MEGASCALE_IB_GID_INDEX; -1: chosen by version and family (gid_choice.h)
  int roce_version = 2;  // MEGASCALE_IB_ROCE_VERSION
  bool ipv6 = false;     // MEGASCALE_IB_ADDR_FAMILY=AF_INET6
  int local_rank = -1;   // MEGASCALE_LOCAL_RANK: which of the host's active ports (rails) this process takes
  int local_size = -1;   // MEGASCALE_LOCAL_SIZE: the host's ranks, which share its ports
  int nics_per_rank = 0;  // MEGASCALE_IB_NICS_PER_RANK; 0: the host's ports over its ranks (1 if unknown)
  int port_index = 0;    // shared(): this one of the active ports (activePortCount's order)
};

class IbDevice {
 public:
  /// The process's device for active port `settings.port_index` (opened at the first call). Throws
  /// Error(kUnavailable) when libibverbs is missing or no device has an active port, naming what was found, and
  /// Error(kInvalidArgument) for a port_index beyond the active ports.
  static std::shared_ptr<IbDevice> shared(const IbSettings& settings);
  /// The active ports this rank takes (port_index values), nearest first (nic_locality.h): one, or several for a
  /// rank that owns several NICs (MEGASCALE_IB_NICS_PER_RANK, or a host with more ports than ranks). Logs the
  /// choice and why. Throws as shared() does.
  static std::vector<int> nearestPorts(const IbSettings& settings);
  /// How many active ports MEGASCALE_IB_HCA takes on this host, every device's in device and port order (the
  /// order of port_index): the NICs the NCCL plugin reports. Throws Error(kUnavailable) without libibverbs.
  static int activePortCount(const IbSettings& settings);
  ~IbDevice();
  IbDevice(const IbDevice&) = delete;
  IbDevice& operator=(const IbDevice&) = delete;

  const VerbsApi& api() const { return *api_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  uint8_t port() const { return port_; }
  const ibv_gid& gid() const { return gid_; }
  int gidIndex() const { return gid_index_; }
  /// The port's link layer is InfiniBand (addressed by LID), not Ethernet (RoCE).
  bool infiniband() const { return infiniband_; }
  uint16_t lid() const { return lid_; }
  ibv_mtu mtu() const { return mtu_; }
  double speedGbps() const { return speed_gbps_; }
  uint64_t nodeGuid() const { return node_guid_; }
  /// The device's PCI path in sysfs (/sys/devices/pci...); empty when it has none (the emulated device).
  const std::string& pciPath() const { return pci_path_; }
  /// The IPv4 address in its GID (dotted); empty for a GID that is not IPv4-mapped.
  const std::string& ipv4() const { return ipv4_; }
  /// The registrations callers made, shared; registrations of any kind take its lock (NCCL registers from
  /// several threads, and providers differ in what they allow).
  RegistrationCache& registrations() { return *registrations_; }

 private:
  IbDevice(const VerbsApi& api, const IbSettings& settings);
  void describe(const VerbsApi& api, ibv_device* device, ibv_context* context);
  /// Takes port `port_number` of the open device if a GID fits it (else the error, and nothing taken).
  Status takePort(const VerbsApi& api, ibv_device* device, ibv_context* context, const std::string& name,
                  int port_number, const ibv_port_attr& port, const IbSettings& settings);
  /// The port's GID table with each entry's type.
  std::vector<GidEntry> gidTable(const VerbsApi& api, ibv_device* device, ibv_context* context, int port_number,
                                 int length) const;

  const VerbsApi* api_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::string name_;
  ibv_gid gid_{};
  int gid_index_ = 0;
  uint8_t port_ = 1;
  bool infiniband_ = false;
  uint16_t lid_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  double speed_gbps_ = 0;
  uint64_t node_guid_ = 0;
  std::string pci_path_, ipv4_;
  std::unique_ptr<RegistrationCache> registrations_;
};

}  // namespace megascale::transport
