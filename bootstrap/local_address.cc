#include "bootstrap/local_address.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include "common/socket.h"

namespace megascale {

std::string localAddressToward(const std::string& host, int port) {
  sockaddr_in target;
  try {
    target = makeAddress(host, port);
  } catch (const Error&) {
    return "0.0.0.0";
  }
  Fd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid() || ::connect(fd.get(), reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0) return "0.0.0.0";
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&local), &len) != 0) return "0.0.0.0";
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return text;
}

}  // namespace megascale
