// The ibverbs transport: RC queue pairs over RoCEv2 (or InfiniBand) through libibverbs, opened at run time.
// Setup goes over an authenticated TCP socket (oob_link.h) that swaps the queue pairs' numbers, PSNs and GIDs
// and then stays as the comm's liveness signal; data moves by RDMA writes into the receiver's posted buffers
// (ib_comm.h). A rank that owns several NICs stripes each connection's queue pairs over them. With
// LD_LIBRARY_PATH=build/testbed/roce it runs on the emulated RoCE device.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "transport/ibverbs/ib_connection.h"
#include "transport/ibverbs/transfer_registration.h"
#include "transport/transport.h"

namespace megascale::transport {

class IbTransport : public Transport {
 public:
  /// Throws Error(kUnavailable) when libibverbs or an active RDMA device is missing.
  explicit IbTransport(const TransportOptions& options);
  /// Whether an RDMA device with an active port matches MEGASCALE_IB_HCA here: MEGASCALE_TRANSPORT=auto takes
  /// ibverbs then, as NCCL takes its IB transport whenever it finds a device.
  static bool deviceAvailable();
  /// The active ports MEGASCALE_IB_HCA takes on this host: TransportOptions::ib.ports name them by index.
  static int nicCount(const TransportOptions& options);
  const Properties& properties() const override { return properties_; }
  std::unique_ptr<Listener> listen() override;
  std::unique_ptr<Connector> connect(const Address& address, uint64_t local_id) override;
  /// Host memory by ibv_reg_mr of its whole pages; device memory by dma-buf (CUDA driver), when built with CUDA;
  /// on each of the rank's NICs (the handle: an IbRegistration). Registrations of ranges a kept one holds share
  /// it (RegistrationCache).
  Status registerMemory(void* data, size_t size, PointerKind kind, MemoryRegion* mr) override;
  Status registerDmaBuf(void* data, size_t size, int fd, uint64_t offset, MemoryRegion* mr) override;
  void deregisterMemory(MemoryRegion* mr) override;
  /// Made on this transport's NICs (a NIC the process's other ibverbs transports share counts theirs too).
  uint64_t registrationsMade() const override;

 private:
  using RailRegister = std::function<ibv_mr*(IbDevice& device, uintptr_t begin, size_t bytes)>;
  /// [begin, begin + bytes) registered (or a kept registration counted) on every rail: mr->handle.
  Status registerOnEveryRail(uintptr_t begin, size_t bytes, bool device_memory, MemoryRegion* mr,
                             const RailRegister& make);
  void releaseOnEveryRail(const IbRegistration& registration);

  TransportOptions options_;
  IbQpSettings qp_settings_;
  Properties properties_;
  std::vector<std::shared_ptr<IbDevice>> rails_;  // the rank's NICs; rail 0 carries the control traffic
};

}  // namespace megascale::transport
