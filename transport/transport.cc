#include "transport/transport.h"

namespace megascale::transport {

Address Address::fromString(const std::string& s) {
  Address a;
  if (s.size() > kMaxAddressBytes) {
    throw Error(ErrorCode::kInvalidArgument, "transport address of " + std::to_string(s.size()) + " bytes exceeds " +
                                                 std::to_string(kMaxAddressBytes));
  }
  std::memcpy(a.bytes, s.data(), s.size());
  a.size = s.size();
  return a;
}

Status Transport::registerMemory(void* data, size_t size, PointerKind kind, MemoryRegion* mr) {
  if (!(properties().pointer_kinds & kind)) {
    return Status(ErrorCode::kInvalidArgument, properties().name + ": cannot register " +
                                                   (kind == kDevicePointer ? "device" : "host") + " memory");
  }
  mr->base = data;
  mr->size = size;
  mr->kind = kind;
  return Status::ok();
}

Status Transport::registerDmaBuf(void*, size_t, int, uint64_t, MemoryRegion*) {
  return Status(ErrorCode::kUnavailable, properties().name + ": cannot register dma-buf memory");
}

bool Transport::canConnect(const Address& address) const {
  const std::string& name = properties().name;
  return address.size > name.size() && std::memcmp(address.bytes, name.data(), name.size()) == 0 &&
         address.bytes[name.size()] == ':' && reaches(address);
}

}  // namespace megascale::transport
