// Mutual challenge-response over any stream socket, driven by non-blocking I/O so an event loop can run it.
//   server -> client: magic "MSC1" + server nonce
//   client -> server: client nonce + HMAC(secret, "client" | server nonce | client nonce | hello) + hello
//   server -> client: verdict byte + HMAC(secret, "server" | client nonce | server nonce)
// The secret never crosses the wire; fresh nonces on both sides stop replay; the role labels stop reflection.
// The hello is a small fixed payload the client authenticates along with itself (rank, connection token).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "common/crypto.h"
#include "common/socket.h"
#include "common/status.h"

namespace megascale {

constexpr size_t kNonceBytes = 32;
using Hello = std::array<uint8_t, 32>;

class AuthSession {
 public:
  enum class Role { kServer, kClient };

  /// `hello` is what a client sends; a server ignores it.
  AuthSession(Role role, std::string secret, Hello hello = {});

  /// Moves the handshake forward on a non-blocking socket as far as it goes without waiting. Sets *done when
  /// it has completed. Errors: kAuthFailed (wrong secret on either side), kPeerLost, kSystem.
  Status progress(int fd, bool* done);

  /// poll() events the handshake waits for next.
  short wantedEvents() const;

  /// The client's hello, valid on the server once done.
  const Hello& peerHello() const { return peer_hello_; }

  /// Runs the handshake to completion on a socket, waiting with poll() until the deadline.
  static Status runBlocking(AuthSession& session, int fd, Deadline deadline, const std::string& what);

 private:
  Digest clientProof() const;
  Digest serverProof() const;
  void prepareStep();

  Role role_;
  std::string secret_;
  Hello hello_;
  Hello peer_hello_{};
  uint8_t server_nonce_[kNonceBytes];
  uint8_t client_nonce_[kNonceBytes];
  int step_ = 0;
  bool step_is_write_ = true;
  uint8_t buffer_[4 + 2 * kNonceBytes + sizeof(Hello)];
  size_t step_size_ = 0;
  size_t step_done_ = 0;
};

}  // namespace megascale
