#include "transport/ibverbs/transfer_registration.h"

#include <algorithm>
#include <cerrno>

namespace megascale::transport {

TransferRegistration& TransferRegistration::operator=(TransferRegistration&& o) noexcept {
  if (this != &o) {
    reset();
    device_ = o.device_;
    mr_ = std::exchange(o.mr_, nullptr);
    hold_ = o.hold_;
    device_memory_ = o.device_memory_;
  }
  return *this;
}

Status TransferRegistration::make(IbDevice& device, void* data, size_t size, const MemoryRegion* given,
                                  TransferRegistration* out) {
  out->reset();
  out->device_ = &device;
  if (given != nullptr && given->handle != nullptr) {
    out->mr_ = static_cast<ibv_mr*>(given->handle);
    out->hold_ = Hold::kBorrowed;
    out->device_memory_ = given->kind == kDevicePointer;
    return Status::ok();
  }
  out->device_memory_ = false;
  const auto begin = reinterpret_cast<uintptr_t>(data);
  const size_t bytes = std::max<size_t>(size, 1);
  RegistrationCache& cache = device.registrations();
  if ((out->mr_ = cache.acquireExisting(begin, begin + bytes, false)) != nullptr) {
    out->hold_ = Hold::kCounted;
    return Status::ok();
  }
  std::lock_guard<std::mutex> guard(cache.lock());
  out->mr_ = device.api().reg_mr(device.pd(), data, bytes, kRegistrationAccess);
  if (out->mr_ == nullptr) {
    return Status(ErrorCode::kSystem, "ibverbs: registering " + std::to_string(size) + " bytes on " + device.name() +
                                          " failed: " + errnoText(errno));
  }
  out->hold_ = Hold::kOwned;
  return Status::ok();
}

void TransferRegistration::reset() {
  if (mr_ != nullptr && hold_ == Hold::kOwned) {
    std::lock_guard<std::mutex> guard(device_->registrations().lock());
    device_->api().dereg_mr(mr_);
  } else if (mr_ != nullptr && hold_ == Hold::kCounted) {
    device_->registrations().release(mr_);
  }
  mr_ = nullptr;
}

}  // namespace megascale::transport
