// Mutual challenge-response over any stream socket, driven by non-blocking I/O so an event loop can run it.
//   client -> server: magic "MSC2" + client nonce + hello
//   server -> client: magic "MSC2" + server nonce + HMAC(secret, "server" | client nonce | server nonce | hello)
//   client -> server: HMAC(secret, "client" | server nonce | client nonce | hello)
// The secret never crosses the wire; fresh nonces on both sides stop replay; the role labels stop reflection.
// The hello is a small fixed payload the client authenticates along with itself (rank, connection token).
// The client speaks first, with its connect, and is done once it has sent its proof: its data can follow in
// the same flight, so a connection costs the server two wake-ups and the client one (a round trip less than
// server-first). A client that finds the server's proof wrong sends an all-zero proof, so both sides see
// kAuthFailed rather than one of them a hang-up.
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
  const Hello& clientHello() const;
  Digest proof(const char (&label)[7], const uint8_t* first_nonce, const uint8_t* second_nonce) const;
  Digest clientProof() const;
  Digest serverProof() const;
  void prepareStep();
  /// Checks a message just read, taking the peer's nonce (and hello) from it.
  Status checkReceived();

  Role role_;
  std::string secret_;
  Hello hello_;
  Hello peer_hello_{};
  uint8_t server_nonce_[kNonceBytes];
  uint8_t client_nonce_[kNonceBytes];
  int step_ = 0;
  bool step_is_write_ = true;
  uint8_t buffer_[4 + 2 * kNonceBytes + sizeof(Hello)];
  bool refused_ = false;  // client: the server's proof was wrong; the zero proof in buffer_ tells it so
  size_t step_size_ = 0;
  size_t step_done_ = 0;
};

}  // namespace megascale
