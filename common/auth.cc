#include "common/auth.h"

#include <poll.h>

#include <cstring>

namespace megascale {

namespace {
constexpr char kMagic[4] = {'M', 'S', 'C', '1'};
constexpr size_t kChallengeBytes = sizeof(kMagic) + kNonceBytes;
constexpr size_t kResponseBytes = kNonceBytes + sizeof(Digest) + sizeof(Hello);
constexpr size_t kVerdictBytes = 1 + sizeof(Digest);
constexpr int kSteps = 3;  // challenge, response, verdict
}  // namespace

AuthSession::AuthSession(Role role, std::string secret, Hello hello)
    : role_(role), secret_(std::move(secret)), hello_(hello) {
  std::memset(server_nonce_, 0, sizeof(server_nonce_));
  std::memset(client_nonce_, 0, sizeof(client_nonce_));
  if (role_ == Role::kServer) {
    randomBytes(server_nonce_, sizeof(server_nonce_));
  } else {
    randomBytes(client_nonce_, sizeof(client_nonce_));
  }
  prepareStep();
}

Digest AuthSession::clientProof() const {
  uint8_t msg[6 + 2 * kNonceBytes + sizeof(Hello)];
  std::memcpy(msg, "client", 6);
  std::memcpy(msg + 6, server_nonce_, kNonceBytes);
  std::memcpy(msg + 6 + kNonceBytes, client_nonce_, kNonceBytes);
  const Hello& hello = role_ == Role::kClient ? hello_ : peer_hello_;
  std::memcpy(msg + 6 + 2 * kNonceBytes, hello.data(), hello.size());
  return hmacSha256(secret_, msg, sizeof(msg));
}

Digest AuthSession::serverProof() const {
  uint8_t msg[6 + 2 * kNonceBytes];
  std::memcpy(msg, "server", 6);
  std::memcpy(msg + 6, client_nonce_, kNonceBytes);
  std::memcpy(msg + 6 + kNonceBytes, server_nonce_, kNonceBytes);
  return hmacSha256(secret_, msg, sizeof(msg));
}

// Fills the buffer for a write step or sizes it for a read step.
void AuthSession::prepareStep() {
  step_done_ = 0;
  bool server = role_ == Role::kServer;
  switch (step_) {
    case 0:
      step_is_write_ = server;
      step_size_ = kChallengeBytes;
      if (server) {
        std::memcpy(buffer_, kMagic, sizeof(kMagic));
        std::memcpy(buffer_ + sizeof(kMagic), server_nonce_, kNonceBytes);
      }
      break;
    case 1:
      step_is_write_ = !server;
      step_size_ = kResponseBytes;
      if (!server) {
        Digest proof = clientProof();
        std::memcpy(buffer_, client_nonce_, kNonceBytes);
        std::memcpy(buffer_ + kNonceBytes, proof.data(), proof.size());
        std::memcpy(buffer_ + kNonceBytes + proof.size(), hello_.data(), hello_.size());
      }
      break;
    case 2:
      step_is_write_ = server;
      step_size_ = kVerdictBytes;
      if (server) {
        Digest proof = serverProof();
        buffer_[0] = 1;
        std::memcpy(buffer_ + 1, proof.data(), proof.size());
      }
      break;
    default:
      break;
  }
}

short AuthSession::wantedEvents() const { return step_is_write_ ? POLLOUT : POLLIN; }

Status AuthSession::progress(int fd, bool* done) {
  *done = false;
  while (step_ < kSteps) {
    Status io = step_is_write_ ? sendSome(fd, buffer_, step_size_, &step_done_)
                               : recvSome(fd, buffer_, step_size_, &step_done_);
    if (!io.isOk()) {
      return Status(io.code(), "authentication handshake (" + std::string(role_ == Role::kServer ? "server" : "client") +
                                   " step " + std::to_string(step_) + "): " + io.message());
    }
    if (step_done_ < step_size_) return Status::ok();
    if (!step_is_write_) {
      if (role_ == Role::kClient && step_ == 0) {
        if (std::memcmp(buffer_, kMagic, sizeof(kMagic)) != 0) {
          return Status(ErrorCode::kAuthFailed, "peer is not a megascale endpoint (bad handshake magic)");
        }
        std::memcpy(server_nonce_, buffer_ + sizeof(kMagic), kNonceBytes);
      } else if (role_ == Role::kServer && step_ == 1) {
        std::memcpy(client_nonce_, buffer_, kNonceBytes);
        Digest claimed;
        std::memcpy(claimed.data(), buffer_ + kNonceBytes, claimed.size());
        std::memcpy(peer_hello_.data(), buffer_ + kNonceBytes + claimed.size(), peer_hello_.size());
        if (!digestEquals(claimed, clientProof())) {
          uint8_t refusal[kVerdictBytes] = {};
          size_t sent = 0;
          (void)sendSome(fd, refusal, sizeof(refusal), &sent);  // best effort: tell the client why
          return Status(ErrorCode::kAuthFailed, "client did not prove the job secret; connection refused");
        }
      } else if (role_ == Role::kClient && step_ == 2) {
        Digest claimed;
        std::memcpy(claimed.data(), buffer_ + 1, claimed.size());
        if (buffer_[0] != 1) {
          return Status(ErrorCode::kAuthFailed, "refused by the server: wrong job secret (unique id from another job?)");
        }
        if (!digestEquals(claimed, serverProof())) {
          return Status(ErrorCode::kAuthFailed, "server did not prove the job secret; not trusting it");
        }
      }
    }
    ++step_;
    prepareStep();
  }
  *done = true;
  return Status::ok();
}

Status AuthSession::runBlocking(AuthSession& session, int fd, Deadline deadline, const std::string& what) {
  while (true) {
    bool done = false;
    Status s = session.progress(fd, &done);
    if (!s.isOk()) return Status(s.code(), what + ": " + s.message());
    if (done) return Status::ok();
    pollfd p{fd, session.wantedEvents(), 0};
    int ready = ::poll(&p, 1, msUntil(deadline));
    if (ready == 0) return Status(ErrorCode::kTimeout, what + ": authentication handshake timed out");
  }
}

}  // namespace megascale
