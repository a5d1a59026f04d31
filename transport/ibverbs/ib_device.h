// The RDMA device the ibverbs transport uses in this process: opened once and shared by every transport, comm
// and queue pair (a protection domain per device, as NCCL keeps one), with the port's attributes and the GID
// queue pairs address each other by.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "transport/ibverbs/verbs_api.h"

namespace megascale::transport {

struct IbSettings {
  std::string hca;       // MEGASCALE_IB_HCA: NCCL_IB_HCA syntax, first entry (prefix, or =exact); empty: the first active
  int gid_index = -1;    // MEGASCALE_IB_GID_INDEX; -1: the first IPv4-mapped (RoCEv2) GID
};

class IbDevice {
 public:
  /// The process's device for these settings (opened at the first call). Throws Error(kUnavailable) when
  /// libibverbs is missing or no device has an active port, naming what was found.
  static std::shared_ptr<IbDevice> shared(const IbSettings& settings);
  ~IbDevice();
  IbDevice(const IbDevice&) = delete;
  IbDevice& operator=(const IbDevice&) = delete;

  const VerbsApi& api() const { return *api_; }
  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& name() const { return name_; }
  uint8_t port() const { return 1; }
  const ibv_gid& gid() const { return gid_; }
  int gidIndex() const { return gid_index_; }
  ibv_mtu mtu() const { return mtu_; }
  double speedGbps() const { return speed_gbps_; }
  /// Registrations go one at a time: NCCL registers from several threads, and providers differ in what they allow.
  std::mutex& registrationLock() { return registration_lock_; }

 private:
  IbDevice(const VerbsApi& api, const IbSettings& settings);

  const VerbsApi* api_;
  ibv_context* context_ = nullptr;
  ibv_pd* pd_ = nullptr;
  std::string name_;
  ibv_gid gid_{};
  int gid_index_ = 0;
  ibv_mtu mtu_ = IBV_MTU_1024;
  double speed_gbps_ = 0;
  std::mutex registration_lock_;
};

}  // namespace megascale::transport
