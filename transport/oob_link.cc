#include "transport/oob_link.h"

#include <sys/socket.h>

#include <cstring>

#include "common/log.h"
#include "transport/tcp/tcp_wire.h"

namespace megascale::transport {

namespace {

constexpr uint32_t kRefusalBit = 1u << 31;
constexpr size_t kMaxRefusalText = 1024;

// A refusal: the error code's byte, then its text (cut short: it is a reason, not a payload).
std::string refusalBlob(const Status& why) {
  return std::string(1, static_cast<char>(why.code())) + why.message().substr(0, kMaxRefusalText);
}

Status refusalStatus(const std::string& blob, const std::string& where) {
  const int code = blob.empty() ? 0 : static_cast<unsigned char>(blob[0]);
  const bool known = code > static_cast<int>(ErrorCode::kOk) && code <= static_cast<int>(ErrorCode::kUnavailable);
  return Status(known ? static_cast<ErrorCode>(code) : ErrorCode::kPeerLost,
                where + ": the listener refused the connection: " + (blob.empty() ? "" : blob.substr(1)));
}

}  // namespace

OobLink::OobLink(Fd fd, uint64_t remote_id, std::string peer)
    : fd_(std::move(fd)), remote_id_(remote_id), peer_(std::move(peer)) {}

bool OobLink::peerGone() const {
  if (!fd_.valid()) return true;
  char byte;
  ssize_t n = ::recv(fd_.get(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return false;  // nothing is ever sent after setup, but bytes are not death
  return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

namespace {
constexpr std::chrono::milliseconds kLivenessCheckPeriod{20};
}  // namespace

bool PeerWatch::alive() {
  if (gone_) return Clock::now() - gone_at_ < grace_;
  if (++calls_ % kCallsPerClockRead != 0) return true;
  Clock::time_point now = Clock::now();
  if (now < next_check_) return true;
  next_check_ = now + kLivenessCheckPeriod;
  gone_ = link_.peerGone();
  if (gone_) {
    gone_at_ = now;
    return grace_ > Clock::duration::zero();
  }
  return true;
}

Status PeerWatch::lost(const std::string& what) const {
  return Status(ErrorCode::kPeerLost, what + " " + link_.peer() + ": the peer closed its connection or died");
}

void BlobIo::startSend(std::string blob, bool refusal) {
  sending_ = true;
  refused_ = refusal;
  blob_ = std::move(blob);
  length_ = static_cast<uint32_t>(blob_.size()) | (refusal ? kRefusalBit : 0);
  header_done_ = body_done_ = 0;
}

void BlobIo::startReceive() {
  sending_ = false;
  refused_ = false;
  blob_.clear();
  length_ = 0;
  header_done_ = body_done_ = 0;
}

Status BlobIo::poll(int fd, bool* done, const std::string& what) {
  *done = false;
  if (header_done_ < sizeof(length_)) {
    Status s = sending_ ? sendSome(fd, &length_, sizeof(length_), &header_done_)
                        : recvSome(fd, &length_, sizeof(length_), &header_done_);
    if (!s.isOk()) return Status(s.code(), what + ": " + s.message());
    if (header_done_ < sizeof(length_)) return Status::ok();
    if (!sending_) {
      refused_ = (length_ & kRefusalBit) != 0;
      length_ &= ~kRefusalBit;
      if (length_ > kMaxBlobBytes) {
        return Status(ErrorCode::kPeerLost, what + ": a setup message of " + std::to_string(length_) +
                                                " bytes (at most " + std::to_string(kMaxBlobBytes) + ")");
      }
      blob_.resize(length_);
    }
  }
  const size_t body = length_ & ~kRefusalBit;
  if (body_done_ < body) {
    Status s = sending_ ? sendSome(fd, blob_.data(), body, &body_done_) : recvSome(fd, blob_.data(), body, &body_done_);
    if (!s.isOk()) return Status(s.code(), what + ": " + s.message());
  }
  *done = body_done_ == body;
  return Status::ok();
}

OobDial::OobDial(const TransportOptions& options, const sockaddr_in& address, uint64_t local_id, std::string blob)
    : address_(address),
      dial_(options, address, tcp_wire::HelloInfo{local_id, 0, 0, 1, options.traffic_class, 0}),
      blob_(std::move(blob)),
      deadline_(deadlineAfter(std::chrono::milliseconds(options.handshake_timeout_ms))),
      timeout_ms_(options.handshake_timeout_ms) {}

Status OobDial::poll(bool* done) {
  *done = stage_ == 3;
  const std::string where = "connecting to " + formatAddress(address_);
  while (stage_ < 3) {
    bool step_done = false;
    if (stage_ == 0) {
      Status s = dial_.poll(&step_done);
      if (!s.isOk()) return Status(s.code(), where + ": " + s.message());
      if (step_done) {
        fd_ = dial_.release();
        io_.startSend(std::move(blob_));
      }
    } else {
      MSC_RETURN_IF_ERROR(io_.poll(fd_.get(), &step_done, where));
      if (step_done && stage_ == 1) io_.startReceive();
    }
    if (!step_done) break;
    ++stage_;
  }
  if (stage_ == 3 && io_.refused()) return refusalStatus(io_.blob(), where);
  if (stage_ < 3 && Clock::now() > deadline_) {
    return Status(ErrorCode::kTimeout, where + ": timed out after " + std::to_string(timeout_ms_) + " ms");
  }
  *done = stage_ == 3;
  return Status::ok();
}

bool OobDial::appendReadiness(std::vector<pollfd>& fds) const {
  if (stage_ == 0) return dial_.appendReadiness(fds);
  if (stage_ < 3) fds.push_back(pollfd{fd_.get(), io_.wantedEvents(), 0});
  return true;
}

OobLink OobDial::release() { return OobLink(std::move(fd_), 0, "listener " + formatAddress(address_)); }

OobServer::OobServer(const TransportOptions& options, std::string owner) : options_(options), owner_(std::move(owner)) {
  std::string host = options.bind_address.empty() ? "127.0.0.1" : options.bind_address;
  fd_ = listenTcp(host, 0, 1024, &bound_);
  setNoDelay(fd_.get());
  setTrafficClass(fd_.get(), options_.traffic_class);
}

void OobServer::acceptNew() {
  while (true) {
    sockaddr_in from{};
    socklen_t len = sizeof(from);
    int fd = ::accept4(fd_.get(), reinterpret_cast<sockaddr*>(&from), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN, or a transient error the next call retries
    pending_.push_back(std::make_unique<Pending>(
        Pending{Fd(fd), from, AuthSession(AuthSession::Role::kServer, options_.secret),
                deadlineAfter(std::chrono::milliseconds(options_.handshake_timeout_ms)), BlobIo{}, 0, 0, {}, Status::ok()}));
  }
}

bool OobServer::step(Pending& p, const Answer& answer, std::vector<OobAccepted>* ready) {
  Status s;
  while (s.isOk()) {
    bool done = false;
    if (p.stage == 0) {
      s = p.auth.progress(p.fd.get(), &done);
      if (done) {
        p.remote_id = tcp_wire::decodeHello(p.auth.peerHello()).local_id;
        p.io.startReceive();
      }
    } else {
      s = p.io.poll(p.fd.get(), &done, "setup with " + describePeer(p.from, p.remote_id));
      if (done && p.stage == 1 && p.io.refused()) {
        s = Status(ErrorCode::kPeerLost, "a client's setup message was flagged as a refusal");
      } else if (done && p.stage == 1) {
        std::string reply;
        p.refusal = answer(OobRequest{p.remote_id, describePeer(p.from, p.remote_id), p.io.blob()}, &reply, &p.state);
        // A client turned away learns why (its side of the error names the listener's reason), then is dropped.
        if (!p.refusal.isOk()) reply = refusalBlob(p.refusal);
        p.io.startSend(std::move(reply), !p.refusal.isOk());
      } else if (done && !p.refusal.isOk()) {
        s = p.refusal;
      } else if (done) {
        ready->push_back(OobAccepted{OobLink(std::move(p.fd), p.remote_id, describePeer(p.from, p.remote_id)),
                                     std::move(p.state)});
        return true;
      }
    }
    if (!done) break;
    ++p.stage;
  }
  if (s.isOk() && Clock::now() > p.deadline) s = Status(ErrorCode::kTimeout, "handshake timed out");
  if (s.isOk()) return false;
  // One bad client (wrong secret, hung up, too slow) must not fail the listener for the others.
  MSC_LOG_WARN("%s transport: refused a connection from %s: %s", owner_.c_str(), formatAddress(p.from).c_str(),
               s.message().c_str());
  return true;
}

void OobServer::poll(const Answer& answer, std::vector<OobAccepted>* ready) {
  acceptNew();
  for (size_t i = 0; i < pending_.size();) {
    if (step(*pending_[i], answer, ready)) {
      pending_.erase(pending_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
}

bool OobServer::appendReadiness(std::vector<pollfd>& fds) const {
  fds.push_back(pollfd{fd_.get(), POLLIN, 0});
  for (const auto& p : pending_) {
    fds.push_back(pollfd{p->fd.get(), p->stage == 0 ? p->auth.wantedEvents() : p->io.wantedEvents(), 0});
  }
  return true;
}

}  // namespace megascale::transport
