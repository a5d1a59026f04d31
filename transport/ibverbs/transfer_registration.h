// The registration a transfer uses, and arrays of control buffers registered for a comm's life.
#pragma once

#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "common/status.h"
#include "transport/ibverbs/ib_device.h"
#include "transport/ibverbs/ib_wire.h"
#include "transport/transport.h"

namespace megascale::transport {

/// What IbTransport::registerMemory leaves in MemoryRegion::handle: the buffer's registration on each of the
/// transport's NICs (rails), each counted in its device's RegistrationCache.
struct IbRegistration {
  int rails = 0;
  std::array<ibv_mr*, kMaxRails> mr{};
};

/// The ibv_mr a transfer uses on each NIC of its connection: the caller's (borrowed), a kept registration
/// holding the buffer (counted), or one made for the transfer alone (owned).
class TransferRegistration {
 public:
  TransferRegistration() = default;
  ~TransferRegistration() { reset(); }
  TransferRegistration(TransferRegistration&& o) noexcept { *this = std::move(o); }
  TransferRegistration& operator=(TransferRegistration&& o) noexcept;
  /// The registration for [data, data + size) on every device (a connection's rails, in rail order): `given`'s
  /// when it carries one (made for as many NICs), else a kept registration that holds the range, else a new one.
  static Status make(const std::vector<std::shared_ptr<IbDevice>>& devices, void* data, size_t size,
                     const MemoryRegion* given, TransferRegistration* out);
  /// On one device.
  static Status make(IbDevice& device, void* data, size_t size, const MemoryRegion* given, TransferRegistration* out);
  void reset();
  /// The registration on rail `rail`'s device.
  ibv_mr* mr(int rail = 0) const { return held_[static_cast<size_t>(rail)].mr; }
  /// Device memory: no CPU may read or write it (no eager copies).
  bool deviceMemory() const { return device_memory_; }

 private:
  enum class Hold { kBorrowed, kCounted, kOwned };
  struct Held {
    IbDevice* device = nullptr;
    ibv_mr* mr = nullptr;
    Hold hold = Hold::kBorrowed;
  };
  /// A kept registration on `device` holding the range, else a new one.
  static Status holdOn(IbDevice& device, void* data, size_t size, Held* out);

  std::array<Held, kMaxRails> held_{};
  int rails_ = 0;
  bool device_memory_ = false;
};

/// A registered array of T that lives as long as its comm.
template <typename T, size_t N>
struct RegisteredArray {
  std::array<T, N> items{};
  TransferRegistration registration;
  /// Registers the array; throws Error naming the device when it cannot.
  void registerOn(IbDevice& device) {
    Status s = TransferRegistration::make(device, items.data(), sizeof(items), nullptr, &registration);
    if (!s.isOk()) throw Error(s.code(), s.message());
  }
};

}  // namespace megascale::transport
