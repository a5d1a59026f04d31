#include "common/auth.h"

#include <poll.h>

#include <cstring>

namespace megascale {

namespace {
constexpr char kMagic[4] = {'M', 'S', 'C', '2'};
constexpr size_t kClientHelloBytes = sizeof(kMagic) + kNonceBytes + sizeof(Hello);
constexpr size_t kServerProofBytes = sizeof(kMagic) + kNonceBytes + sizeof(Digest);
constexpr size_t kClientProofBytes = sizeof(Digest);
constexpr int kSteps = 3;  // client hello, server proof, client proof
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

const Hello& AuthSession::clientHello() const { return role_ == Role::kClient ? hello_ : peer_hello_; }

Digest AuthSession::proof(const char (&label)[7], const uint8_t* first_nonce, const uint8_t* second_nonce) const {
  uint8_t msg[6 + 2 * kNonceBytes + sizeof(Hello)];
  std::memcpy(msg, label, 6);
  std::memcpy(msg + 6, first_nonce, kNonceBytes);
  std::memcpy(msg + 6 + kNonceBytes, second_nonce, kNonceBytes);
  std::memcpy(msg + 6 + 2 * kNonceBytes, clientHello().data(), sizeof(Hello));
  return hmacSha256(secret_, msg, sizeof(msg));
}

Digest AuthSession::clientProof() const { return proof("client", server_nonce_, client_nonce_); }
Digest AuthSession::serverProof() const { return proof("server", client_nonce_, server_nonce_); }

// Fills the buffer for a write step or sizes it for a read step.
void AuthSession::prepareStep() {
  step_done_ = 0;
  const bool client = role_ == Role::kClient;
  switch (step_) {
    case 0:
      step_is_write_ = client;
      step_size_ = kClientHelloBytes;
      if (client) {
        std::memcpy(buffer_, kMagic, sizeof(kMagic));
        std::memcpy(buffer_ + sizeof(kMagic), client_nonce_, kNonceBytes);
        std::memcpy(buffer_ + sizeof(kMagic) + kNonceBytes, hello_.data(), hello_.size());
      }
      break;
    case 1:
      step_is_write_ = !client;
      step_size_ = kServerProofBytes;
      if (!client) {
        Digest p = serverProof();
        std::memcpy(buffer_, kMagic, sizeof(kMagic));
        std::memcpy(buffer_ + sizeof(kMagic), server_nonce_, kNonceBytes);
        std::memcpy(buffer_ + sizeof(kMagic) + kNonceBytes, p.data(), p.size());
      }
      break;
    case 2:
      step_is_write_ = client;
      step_size_ = kClientProofBytes;
      if (client) {
        if (refused_) {
          std::memset(buffer_, 0, kClientProofBytes);
        } else {
          Digest p = clientProof();
          std::memcpy(buffer_, p.data(), p.size());
        }
      }
      break;
    default:
      break;
  }
}

short AuthSession::wantedEvents() const { return step_is_write_ ? POLLOUT : POLLIN; }

Status AuthSession::checkReceived() {
  if (role_ == Role::kServer && step_ == 0) {
    if (std::memcmp(buffer_, kMagic, sizeof(kMagic)) != 0) {
      return Status(ErrorCode::kAuthFailed, "peer is not a megascale endpoint of this version (bad handshake magic)");
    }
    std::memcpy(client_nonce_, buffer_ + sizeof(kMagic), kNonceBytes);
    std::memcpy(peer_hello_.data(), buffer_ + sizeof(kMagic) + kNonceBytes, peer_hello_.size());
  } else if (role_ == Role::kClient && step_ == 1) {
    if (std::memcmp(buffer_, kMagic, sizeof(kMagic)) != 0) {
      return Status(ErrorCode::kAuthFailed, "peer is not a megascale endpoint of this version (bad handshake magic)");
    }
    std::memcpy(server_nonce_, buffer_ + sizeof(kMagic), kNonceBytes);
    Digest claimed;
    std::memcpy(claimed.data(), buffer_ + sizeof(kMagic) + kNonceBytes, claimed.size());
    refused_ = !digestEquals(claimed, serverProof());
  } else if (role_ == Role::kServer && step_ == 2) {
    Digest claimed;
    std::memcpy(claimed.data(), buffer_, claimed.size());
    if (!digestEquals(claimed, clientProof())) {
      return Status(ErrorCode::kAuthFailed, "client did not prove the job secret; connection refused");
    }
  }
  return Status::ok();
}

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
    if (!step_is_write_) MSC_RETURN_IF_ERROR(checkReceived());
    const bool wrote = step_is_write_;
    ++step_;
    prepareStep();
    // What follows a write is the peer's answer to it, which cannot be there yet: wait for it (wantedEvents()
    // says POLLIN) rather than spend a read that finds nothing.
    if (wrote && step_ < kSteps && !step_is_write_) return Status::ok();
  }
  if (refused_) {
    return Status(ErrorCode::kAuthFailed, "the server did not prove the job secret: wrong job secret (unique id from "
                                          "another job?); not trusting it");
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
