#include "transport/address_list.h"

#include <cstring>

namespace megascale::transport {

std::string encodeAddressList(const ListenerAddresses& listeners) {
  const std::string host = listeners.host.substr(0, kMaxHostNameBytes);
  std::string out(1, static_cast<char>(host.size()));
  out += host;
  out += static_cast<char>(listeners.addresses.size());
  for (const Address& a : listeners.addresses) {
    out += static_cast<char>(a.size);
    out.append(reinterpret_cast<const char*>(a.bytes), a.size);
  }
  if (listeners.addresses.size() > 255 || out.size() > kMaxAddressListBytes) {
    throw Error(ErrorCode::kInvalidArgument, "the listeners' addresses take " + std::to_string(out.size()) +
                                                 " bytes, more than the " + std::to_string(kMaxAddressListBytes) + " a rank may publish");
  }
  return out;
}

ListenerAddresses decodeAddressList(std::string_view bytes, const std::string& from) {
  const auto fail = [&](const std::string& why) {
    return Error(ErrorCode::kPeerLost, "the listener addresses of " + from + " are malformed: " + why);
  };
  ListenerAddresses out;
  size_t pos = 0;
  const auto length = [&]() -> size_t {
    if (pos >= bytes.size()) throw fail("it ends after " + std::to_string(pos) + " bytes");
    return static_cast<unsigned char>(bytes[pos++]);
  };
  const size_t host_size = length();
  if (host_size > kMaxHostNameBytes || host_size > bytes.size() - pos) throw fail("the host name runs past the end");
  out.host.assign(bytes.data() + pos, host_size);
  pos += host_size;
  const size_t count = length();
  if (count == 0) throw fail("no address");
  out.addresses.resize(count);
  for (Address& a : out.addresses) {
    a.size = length();
    if (a.size > kMaxAddressBytes || a.size > bytes.size() - pos) throw fail("an address runs past the end");
    std::memcpy(a.bytes, bytes.data() + pos, a.size);
    pos += a.size;
  }
  if (pos != bytes.size()) throw fail(std::to_string(bytes.size() - pos) + " bytes left over");
  return out;
}

}  // namespace megascale::transport
