// Where one rank listens, on every transport it offers: its host's name and the addresses of its listeners,
// best transport first, packed into one blob for the store or a split's all-gather. Each address names its transport
// ("tcp:...", "shm:..."), so a peer picks the first transport of its own that can connect to one of them.
// Decoding checks every length, since the bytes come from other processes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "transport/transport.h"

namespace megascale::transport {

struct ListenerAddresses {
  std::string host;                 // the host's name (for error messages), at most kMaxHostNameBytes
  std::vector<Address> addresses;   // best transport first
};

constexpr size_t kMaxHostNameBytes = 64;
/// Room for the host name and three transports' addresses; a split's all-gather carries this many bytes per rank.
constexpr size_t kMaxAddressListBytes = 1 + kMaxHostNameBytes + 1 + 3 * (1 + kMaxAddressBytes);

/// One byte of host-name length and the name (cut to kMaxHostNameBytes), one byte of count, then per address
/// one byte of length and its bytes. Throws Error(kInvalidArgument) when it does not fit kMaxAddressListBytes.
std::string encodeAddressList(const ListenerAddresses& listeners);

/// Throws Error(kPeerLost) naming `from` when the bytes are not such a list (a count or length that runs
/// past the end, bytes left over, no address).
ListenerAddresses decodeAddressList(std::string_view bytes, const std::string& from);

}  // namespace megascale::transport
