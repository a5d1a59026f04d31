// Which local IPv4 address reaches a host: the one the kernel's routing table would use. Found with a UDP
// socket's connect(), which sends nothing.
#pragma once

#include <string>

namespace megascale {

/// "127.0.0.1" for loopback targets; the routed source address otherwise; "0.0.0.0" if unknown.
std::string localAddressToward(const std::string& host, int port);

}  // namespace megascale
