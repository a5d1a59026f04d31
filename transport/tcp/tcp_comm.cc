#include "transport/tcp/tcp_comm.h"

#include <sys/socket.h>

#include <algorithm>

#include "common/log.h"
#include "transport/request_pool.h"
#include "transport/tcp/tcp_wire.h"

namespace megascale::transport {

// ---------------------------------------------------------------------------------------------- send side

namespace {
// A failed dial of later stripes is tried again this much later, this many times in all: the listener drops a
// handshake its comm's owner left unanswered too long, and that must not cost the connection its stripes for good.
constexpr auto kDialRetryPause = std::chrono::seconds(1);
constexpr int kDialAttempts = 3;
}  // namespace

TcpSendComm::TcpSendComm(std::vector<Fd> sockets, size_t stripe_min, std::string peer, std::optional<LaterStripes> later)
    : sockets_(std::move(sockets)),
      cursors_(sockets_.size()),
      stripe_min_(stripe_min),
      peer_(std::move(peer)),
      later_(std::move(later)) {
  if (later_ && later_->sockets <= liveSockets()) later_.reset();
}

void TcpSendComm::startDialing() {
  const LaterStripes& l = *later_;
  for (int i = liveSockets(); i < l.sockets; ++i) {
    tcp_wire::HelloInfo hello{l.local_id, l.token, static_cast<uint16_t>(i), static_cast<uint16_t>(l.sockets),
                              l.options.traffic_class, tcp_wire::kJoin};
    dials_.push_back(Dial{TcpDial(l.options, l.addr, hello)});
  }
  dial_deadline_ = deadlineAfter(std::chrono::milliseconds(l.options.handshake_timeout_ms));
  ++dial_attempts_;
}

void TcpSendComm::progressDials() {
  Status failed;
  for (Dial& d : dials_) {
    if (d.done) continue;
    Status s = d.dial.poll(&d.done);
    if (!s.isOk()) {
      failed = s;
      break;
    }
  }
  const bool waiting = std::any_of(dials_.begin(), dials_.end(), [](const Dial& d) { return !d.done; });
  if (failed.isOk() && waiting && Clock::now() > dial_deadline_) {
    failed = Status(ErrorCode::kTimeout, "timed out");
  }
  if (!failed.isOk()) {
    const bool again = dial_attempts_ < kDialAttempts;
    MSC_LOG_WARN("tcp send to %s: a later stripe did not join (%s); %s on %d socket(s)", peer_.c_str(),
                 failed.message().c_str(), again ? "trying again later, meanwhile" : "carrying on", liveSockets());
    dials_.clear();
    if (!again) later_.reset();
    next_dial_ = deadlineAfter(kDialRetryPause);
    return;
  }
  // Sockets go live in index order: part i of a message always travels on socket i.
  size_t live = 0;
  while (live < dials_.size() && dials_[live].done) {
    sockets_.push_back(dials_[live].dial.release());
    cursors_.push_back(Cursor{head_seq_ + queue_.size(), 0});  // from the next message on
    ++live;
  }
  dials_.erase(dials_.begin(), dials_.begin() + static_cast<std::ptrdiff_t>(live));
  if (live > 0 && dials_.empty()) later_.reset();  // fully striped
}

Status TcpSendComm::fail(const Status& cause) {
  if (error_.isOk()) error_ = Status(cause.code(), "tcp send to " + peer_ + ": " + cause.message());
  return error_;
}

Status TcpSendComm::isend(const void* data, size_t size, uint32_t tag, const MemoryRegion*, Request** request) {
  *request = nullptr;
  if (!error_.isOk()) return error_;
  if (data == nullptr && size > 0) return Status(ErrorCode::kInvalidArgument, "tcp isend: null buffer");
  SendRequest* slot = pool_.free();
  if (slot == nullptr) return Status::ok();  // all slots busy: the caller retries after test()
  slot->data = static_cast<const uint8_t*>(data);
  slot->size = size;
  if (later_ && dials_.empty() && size >= stripe_min_ && Clock::now() >= next_dial_) startDialing();
  slot->parts = tcp_wire::partsFor(size, liveSockets(), stripe_min_);
  tcp_wire::encodeHeader(tag, slot->parts, size, slot->header);
  slot->sockets_left = slot->parts;
  slot->done = false;
  slot->in_use = true;
  queue_.push_back(slot);
  *request = slot;
  return progress();  // small messages usually leave right here
}

Status TcpSendComm::progressSocket(int index) {
  Cursor& c = cursors_[index];
  if (c.seq < head_seq_) c = Cursor{head_seq_, 0};  // it had no part in the messages that left meanwhile
  while (c.seq < head_seq_ + queue_.size()) {
    SendRequest* r = queue_[c.seq - head_seq_];
    if (index >= r->parts) {  // no part of this message travels on this socket
      ++c.seq;
      continue;
    }
    uint64_t begin, end;
    tcp_wire::partExtent(r->size, r->parts, index, &begin, &end);
    size_t head = index == 0 ? tcp_wire::kHeaderBytes : 0;
    Status s = sendSomeOfTwo(sockets_[index].get(), r->header, head, r->data + begin, end - begin, &c.offset);
    if (!s.isOk()) return s;
    if (c.offset < head + (end - begin)) return Status::ok();  // socket full; come back later
    if (--r->sockets_left == 0) r->done = true;
    ++c.seq;
    c.offset = 0;
  }
  return Status::ok();
}

Status TcpSendComm::progress() {
  if (!error_.isOk()) return error_;
  if (!dials_.empty()) progressDials();
  for (size_t i = 0; i < sockets_.size(); ++i) {
    Status s = progressSocket(static_cast<int>(i));
    if (!s.isOk()) return fail(s);
  }
  while (!queue_.empty() && queue_.front()->done) {
    queue_.pop_front();
    ++head_seq_;
  }
  return Status::ok();
}

bool TcpSendComm::appendReadiness(std::vector<pollfd>& fds) const {
  for (size_t i = 0; i < sockets_.size(); ++i) {  // the sockets with bytes left to send
    if (cursors_[i].seq < head_seq_ + queue_.size()) fds.push_back(pollfd{sockets_[i].get(), POLLOUT, 0});
  }
  for (const Dial& d : dials_) {
    if (!d.dial.appendReadiness(fds)) return false;
  }
  return true;
}

Status TcpSendComm::test(Request* request, bool* done, size_t* size) {
  *done = false;
  auto* r = static_cast<SendRequest*>(request);
  if (r == nullptr || !r->in_use) return Status(ErrorCode::kInvalidArgument, "tcp test: not an active send request");
  MSC_RETURN_IF_ERROR(progress());
  if (r->done) {
    *done = true;
    if (size != nullptr) *size = r->size;
    r->in_use = false;
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------------------------- recv side

TcpRecvComm::TcpRecvComm(std::vector<Fd> sockets, uint64_t remote_id, std::string peer, std::shared_ptr<JoinInbox> inbox)
    : sockets_(std::move(sockets)),
      cursors_(sockets_.size()),
      remote_id_(remote_id),
      peer_(std::move(peer)),
      inbox_(std::move(inbox)) {}

int TcpRecvComm::liveSockets() const {
  return static_cast<int>(std::count_if(sockets_.begin(), sockets_.end(), [](const Fd& fd) { return fd.valid(); }));
}

void TcpRecvComm::adoptJoined() {
  if (!inbox_ || !inbox_->any.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(inbox_->mutex);
  for (auto& [index, fd] : inbox_->arrived) {
    if (index <= 0 || static_cast<size_t>(index) >= sockets_.size() || sockets_[static_cast<size_t>(index)].valid()) {
      continue;  // a duplicate or out of range: the listener checked, so only a misbehaving peer sends it
    }
    sockets_[static_cast<size_t>(index)] = std::move(fd);
    cursors_[static_cast<size_t>(index)] = Cursor{head_seq_, 0, 1};  // it skips the messages it has no part of
  }
  inbox_->arrived.clear();
  inbox_->any.store(false, std::memory_order_relaxed);
  if (liveSockets() == static_cast<int>(sockets_.size())) inbox_.reset();
}

Status TcpRecvComm::fail(const Status& cause) {
  if (error_.isOk()) error_ = Status(cause.code(), "tcp recv from " + peer_ + ": " + cause.message());
  return error_;
}

Status TcpRecvComm::irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags,
                          const MemoryRegion* const*, Request** request) {
  *request = nullptr;
  if (!error_.isOk()) return error_;
  RecvRequest* slot;
  MSC_RETURN_IF_ERROR(claimReceiveSlot(pool_, n, data, sizes, tags, &slot));
  if (slot == nullptr) return Status::ok();  // all slots busy: the caller retries after test()
  for (int i = 0; i < n; ++i) {
    Message m{};
    m.request = slot;
    messages_.push_back(m);
  }
  *request = slot;
  return progress();
}

bool TcpRecvComm::appendReadiness(std::vector<pollfd>& fds) const {
  for (size_t i = 0; i < sockets_.size(); ++i) {
    const Cursor& c = cursors_[i];
    if (!sockets_[i].valid()) continue;  // a lazy stripe not joined yet: the listener's readiness covers it
    if (c.seq >= head_seq_ + messages_.size()) continue;  // nothing posted for this socket
    // A later socket's bytes wait until socket 0 has read the message's header: do not wake on them.
    if (i > 0 && messages_[c.seq - head_seq_].sub < 0) continue;
    fds.push_back(pollfd{sockets_[i].get(), POLLIN, 0});
  }
  return true;
}

Status TcpRecvComm::matchHeader(Message& m) {
  uint32_t tag;
  tcp_wire::decodeHeader(m.header, &tag, &m.parts, &m.size);
  if (m.parts < 1 || static_cast<size_t>(m.parts) > sockets_.size()) {
    return Status(ErrorCode::kPeerLost, "malformed message header: " + std::to_string(m.parts) + " parts on a connection of " +
                                            std::to_string(sockets_.size()) + " socket(s)");
  }
  MSC_RETURN_IF_ERROR(m.request->posted.match(tag, m.size, &m.sub));
  m.sockets_left = m.parts;
  return Status::ok();
}

Status TcpRecvComm::progressSocket(int index) {
  Cursor& c = cursors_[index];
  int fd = sockets_[index].get();
  if (fd < 0) return Status::ok();  // a lazy stripe not joined yet
  if (c.seq < head_seq_) c = Cursor{head_seq_, 0, c.wake_bytes};  // it had no part in the messages done meanwhile
  while (c.seq < head_seq_ + messages_.size()) {
    Message& m = messages_[c.seq - head_seq_];
    if (index == 0 && c.offset < tcp_wire::kHeaderBytes) {
      size_t got = c.offset;
      MSC_RETURN_IF_ERROR(recvSome(fd, m.header, tcp_wire::kHeaderBytes, &got));
      c.offset = got;
      if (c.offset < tcp_wire::kHeaderBytes) {
        wakeAfter(index, 1);
        return Status::ok();
      }
      MSC_RETURN_IF_ERROR(matchHeader(m));
    }
    if (m.sub < 0) return Status::ok();  // socket 0 has not read this message's header yet
    if (index >= m.parts) {  // no part of this message travels on this socket
      ++c.seq;
      continue;
    }
    uint64_t begin, end;
    tcp_wire::partExtent(m.size, m.parts, index, &begin, &end);
    size_t head = index == 0 ? tcp_wire::kHeaderBytes : 0;
    size_t got = c.offset - head;
    MSC_RETURN_IF_ERROR(recvSome(fd, m.request->posted.data[m.sub] + begin, end - begin, &got));
    c.offset = head + got;
    if (got < end - begin) {
      wakeAfter(index, end - begin - got);
      return Status::ok();
    }
    if (--m.sockets_left == 0 && --m.request->posted.messages_left == 0) m.request->done = true;
    ++c.seq;
    c.offset = 0;
  }
  return Status::ok();
}

void TcpRecvComm::wakeAfter(int index, size_t remaining) {
  // A poller sleeping on this socket wakes once this much has arrived (never more than the message still
  // owes, so it always comes), not at every packet.
  const int bytes = static_cast<int>(std::min<size_t>(remaining, kWakeBytes));
  Cursor& c = cursors_[index];
  if (c.wake_bytes == bytes) return;
  if (::setsockopt(sockets_[index].get(), SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof(bytes)) == 0) c.wake_bytes = bytes;
}

Status TcpRecvComm::progress() {
  if (!error_.isOk()) return error_;
  adoptJoined();
  for (size_t i = 0; i < sockets_.size(); ++i) {
    Status s = progressSocket(static_cast<int>(i));
    if (!s.isOk()) return fail(s);
  }
  while (!messages_.empty() && messages_.front().sockets_left == 0) {
    messages_.pop_front();
    ++head_seq_;
  }
  return Status::ok();
}

Status TcpRecvComm::test(Request* request, bool* done, size_t* sizes) {
  *done = false;
  auto* r = static_cast<RecvRequest*>(request);
  if (r == nullptr || !r->in_use) return Status(ErrorCode::kInvalidArgument, "tcp test: not an active recv request");
  MSC_RETURN_IF_ERROR(progress());
  if (r->done) {
    *done = true;
    if (sizes != nullptr) r->posted.copySizes(sizes);
    r->in_use = false;
  }
  return Status::ok();
}

}  // namespace megascale::transport
