#include "bench/bench_memory.h"

#include <new>

#include "collectives/memory/cuda_space.h"
#include "collectives/memory/fake_device.h"

namespace megascale::bench {

bool BenchMemory::parse(const std::string& text, Kind* kind) {
  if (text == "host") *kind = kHost;
  else if (text == "pinned") *kind = kPinned;
  else if (text == "device") *kind = kDevice;
  else if (text == "fake-device") *kind = kFakeDevice;
  else return false;
  return true;
}

bool BenchMemory::open(Kind kind, int local_rank, BenchMemory* memory, std::string* why) {
  memory->kind_ = kind;
  memory->space_ = nullptr;
  if (kind == kHost) return true;
  if (kind == kFakeDevice) {
    memory->space_ = &memory::fakeDevice();
    return true;
  }
  memory::CudaSpace* cuda = nullptr;
  Status s = memory::CudaSpace::forLocalRank(local_rank, &cuda);
  if (!s.isOk()) {
    *why = std::string("--memory ") + (kind == kPinned ? "pinned" : "device") + " " + s.message();
    return false;
  }
  memory->space_ = cuda;
  return true;
}

void* BenchMemory::allocate(size_t bytes) const {
  if (space_ == nullptr) return ::operator new(bytes, std::nothrow);
  return kind_ == kPinned ? space_->allocateStaging(bytes) : space_->allocate(bytes);
}

void BenchMemory::release(void* data) const {
  if (data == nullptr) return;
  if (space_ == nullptr) ::operator delete(data);
  else if (kind_ == kPinned) space_->releaseStaging(data);
  else space_->release(data);
}

std::string BenchMemory::describe() const {
  switch (kind_) {
    case kHost: return "host";
    case kPinned: return "pinned (" + space_->name() + ")";
    default: return "device (" + space_->name() + ")";
  }
}

}  // namespace megascale::bench
