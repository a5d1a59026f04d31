// One outgoing TCP socket of a comm, from socket() through the client's side of the handshake, without ever
// blocking: the connector dials a comm's first sockets with it, and a send comm dials its later stripes.
#pragma once

#include <netinet/in.h>
#include <poll.h>

#include <vector>

#include "common/auth.h"
#include "common/socket.h"
#include "transport/tcp/tcp_wire.h"
#include "transport/transport.h"

namespace megascale::transport {

class TcpDial {
 public:
  TcpDial(const TransportOptions& options, const sockaddr_in& addr, const tcp_wire::HelloInfo& hello);

  /// Moves the dial as far as it goes now; *done once the server has proven the secret. Errors (kPeerLost,
  /// kAuthFailed, kSystem) name the step, not the peer: the caller does.
  Status poll(bool* done);
  /// The descriptor and events the next step waits for; false before the first poll (nothing to wait on yet).
  bool appendReadiness(std::vector<pollfd>& fds) const;
  /// The authenticated socket, once poll() said done.
  Fd release() { return std::move(fd_); }

 private:
  sockaddr_in addr_;
  int traffic_class_;
  int dead_peer_timeout_ms_;
  Fd fd_;
  bool connected_ = false;
  bool authenticated_ = false;
  AuthSession auth_;
};

}  // namespace megascale::transport
