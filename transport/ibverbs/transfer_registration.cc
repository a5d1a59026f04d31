#include "transport/ibverbs/transfer_registration.h"

#include <algorithm>
#include <cerrno>

namespace megascale::transport {

TransferRegistration& TransferRegistration::operator=(TransferRegistration&& o) noexcept {
  if (this != &o) {
    reset();
    held_ = std::exchange(o.held_, {});
    rails_ = std::exchange(o.rails_, 0);
    device_memory_ = o.device_memory_;
  }
  return *this;
}

Status TransferRegistration::make(const std::vector<std::shared_ptr<IbDevice>>& devices, void* data, size_t size,
                                  const MemoryRegion* given, TransferRegistration* out) {
  out->reset();
  const int rails = static_cast<int>(devices.size());
  if (given != nullptr && given->handle != nullptr) {
    const auto* registration = static_cast<const IbRegistration*>(given->handle);
    if (registration->rails != rails) {
      return Status(ErrorCode::kInvalidArgument,
                    "ibverbs: a buffer registered on " + std::to_string(registration->rails) +
                        " NIC(s) used on a connection over " + std::to_string(rails) + " (" + devices[0]->name() +
                        "...): register it with the transport that made the connection");
    }
    for (int r = 0; r < rails; ++r) {
      out->held_[static_cast<size_t>(r)] = Held{devices[static_cast<size_t>(r)].get(), registration->mr[static_cast<size_t>(r)], Hold::kBorrowed};
    }
    out->rails_ = rails;
    out->device_memory_ = given->kind == kDevicePointer;
    return Status::ok();
  }
  out->device_memory_ = false;
  for (int r = 0; r < rails; ++r) {
    Status s = holdOn(*devices[static_cast<size_t>(r)], data, size, &out->held_[static_cast<size_t>(r)]);
    out->rails_ = r + 1;
    if (!s.isOk()) {
      out->reset();
      return s;
    }
  }
  return Status::ok();
}

Status TransferRegistration::make(IbDevice& device, void* data, size_t size, const MemoryRegion* given,
                                  TransferRegistration* out) {
  // Not owned: the caller keeps the device alive while the registration lives.
  return make({std::shared_ptr<IbDevice>(&device, [](IbDevice*) {})}, data, size, given, out);
}

Status TransferRegistration::holdOn(IbDevice& device, void* data, size_t size, Held* out) {
  out->device = &device;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const size_t bytes = std::max<size_t>(size, 1);
  RegistrationCache& cache = device.registrations();
  if ((out->mr = cache.acquireExisting(begin, begin + bytes, false)) != nullptr) {
    out->hold = Hold::kCounted;
    return Status::ok();
  }
  std::lock_guard<std::mutex> guard(cache.lock());
  out->mr = device.api().reg_mr(device.pd(), data, bytes, kRegistrationAccess);
  if (out->mr == nullptr) {
    return Status(ErrorCode::kSystem, "ibverbs: registering " + std::to_string(size) + " bytes on " + device.name() +
                                          " failed: " + errnoText(errno));
  }
  cache.countTransferRegistration();
  out->hold = Hold::kOwned;
  return Status::ok();
}

void TransferRegistration::reset() {
  for (int r = 0; r < rails_; ++r) {
    Held& h = held_[static_cast<size_t>(r)];
    if (h.mr != nullptr && h.hold == Hold::kOwned) {
      std::lock_guard<std::mutex> guard(h.device->registrations().lock());
      h.device->api().dereg_mr(h.mr);
    } else if (h.mr != nullptr && h.hold == Hold::kCounted) {
      h.device->registrations().release(h.mr);
    }
    h = Held{};
  }
  rails_ = 0;
}

}  // namespace megascale::transport
