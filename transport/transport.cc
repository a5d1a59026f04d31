#include "transport/transport.h"

#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

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
    return Status(ErrorCode::kInvalidArgument, properties().name + ": cannot register this kind of memory");
  }
  mr->base = data;
  mr->size = size;
  mr->kind = kind;
  return Status::ok();
}

std::unique_ptr<Transport> createTransport(const std::string& name, const TransportOptions& options) {
  if (name == "tcp") return std::make_unique<TcpTransport>(options);
  if (name == "shm") return std::make_unique<ShmTransport>(options);
  throw Error(ErrorCode::kInvalidArgument, "unknown transport '" + name + "' (expected tcp or shm)");
}

}  // namespace megascale::transport
