// The registration a transfer uses, and arrays of control buffers registered for a comm's life.
#pragma once

#include <array>
#include <utility>

#include "common/status.h"
#include "transport/ibverbs/ib_device.h"
#include "transport/transport.h"

namespace megascale::transport {

/// An ibv_mr held for a transfer: the caller's (borrowed), a kept registration holding the buffer (counted), or
/// one made for the transfer alone (owned).
class TransferRegistration {
 public:
  TransferRegistration() = default;
  ~TransferRegistration() { reset(); }
  TransferRegistration(TransferRegistration&& o) noexcept { *this = std::move(o); }
  TransferRegistration& operator=(TransferRegistration&& o) noexcept;
  /// The registration for [data, data + size): `given`'s when it carries one, else a kept registration that
  /// holds the range, else a new one.
  static Status make(IbDevice& device, void* data, size_t size, const MemoryRegion* given, TransferRegistration* out);
  void reset();
  ibv_mr* mr() const { return mr_; }
  /// Device memory: no CPU may read or write it (no eager copies).
  bool deviceMemory() const { return device_memory_; }

 private:
  enum class Hold { kBorrowed, kCounted, kOwned };
  IbDevice* device_ = nullptr;
  ibv_mr* mr_ = nullptr;
  Hold hold_ = Hold::kBorrowed;
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
