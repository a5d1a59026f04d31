#include "transport/shm/shm_comm.h"

#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "transport/request_pool.h"

namespace megascale::transport {

namespace {
// Checking the socket costs a syscall: do it only after this many tests in a row that moved nothing.
constexpr uint32_t kIdleTestsPerLivenessCheck = 64;
// Counts tests that moved nothing and, every so often, asks the socket whether the peer is gone.
bool peerGone(bool moved, uint32_t* idle_tests, int fd) {
  if (moved) {
    *idle_tests = 0;
    return false;
  }
  return ++*idle_tests % kIdleTestsPerLivenessCheck == 0 && peerHungUp(fd);
}

}  // namespace

RingMapping::~RingMapping() { munmap(base_, size_); }

bool peerHungUp(int fd) {
  char byte;
  ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

// ---------------------------------------------------------------------------------------------- send side

ShmSendComm::ShmSendComm(Fd socket, std::unique_ptr<RingMapping> mapping, size_t remote_min_bytes, std::string peer)
    : socket_(std::move(socket)), mapping_(std::move(mapping)), remote_min_bytes_(remote_min_bytes), peer_(std::move(peer)) {}

Status ShmSendComm::isend(const void* data, size_t size, uint32_t tag, const MemoryRegion*, Request** request) {
  *request = nullptr;
  if (!error_.isOk()) return error_;
  if (data == nullptr && size > 0) return Status(ErrorCode::kInvalidArgument, "shm isend: null buffer");
  SendRequest* slot = pool_.free();
  if (slot == nullptr) return Status::ok();
  bool remote = size >= remote_min_bytes_ && mapping_->ring().header()->cma_ok.load(std::memory_order_acquire) == 1;
  slot->record = shm::Record{tag, remote ? shm::kRemote : shm::kInline, size, reinterpret_cast<uint64_t>(data)};
  slot->data = static_cast<const uint8_t*>(data);
  slot->written = 0;
  slot->ack_needed = remote ? ++remote_records_ : 0;
  slot->done = false;
  slot->in_use = true;
  queue_.push_back(slot);
  *request = slot;
  bool moved;
  return progress(&moved);
}

Status ShmSendComm::progress(bool* moved) {
  *moved = false;
  if (!error_.isOk()) return error_;
  shm::Ring& ring = mapping_->ring();
  uint64_t acks = ring.header()->acks.load(std::memory_order_acquire);
  for (SendRequest* r : queue_) {
    uint64_t payload = r->record.kind == shm::kInline ? r->record.size : 0;
    uint64_t total = sizeof(shm::Record) + payload;
    if (r->written < total) {
      if (r->written == 0) {  // the record goes in whole, so the reader never sees half of one
        if (ring.freeSpace() < sizeof(shm::Record)) break;
        ring.write(reinterpret_cast<const uint8_t*>(&r->record), sizeof(shm::Record));
        r->written = sizeof(shm::Record);
        *moved = true;
      }
      uint64_t done = r->written - sizeof(shm::Record);
      size_t n = ring.write(r->data + done, payload - done);
      r->written += n;
      *moved = *moved || n > 0;
      if (r->written < total) break;  // ring full: later requests must wait their turn
    }
    if (!r->done && (r->record.kind == shm::kInline || acks >= r->ack_needed)) {
      r->done = true;
      *moved = true;
    }
  }
  while (!queue_.empty() && queue_.front()->done) queue_.pop_front();
  return Status::ok();
}

Status ShmSendComm::test(Request* request, bool* done, size_t* size) {
  *done = false;
  auto* r = static_cast<SendRequest*>(request);
  if (r == nullptr || !r->in_use) return Status(ErrorCode::kInvalidArgument, "shm test: not an active send request");
  bool moved;
  MSC_RETURN_IF_ERROR(progress(&moved));
  if (r->done) {
    *done = true;
    if (size != nullptr) *size = r->record.size;
    r->in_use = false;
    idle_tests_ = 0;
    return Status::ok();
  }
  if (peerGone(moved, &idle_tests_, socket_.get())) {
    error_ = Status(ErrorCode::kPeerLost, "shm send to " + peer_ + ": the receiving process exited");
  }
  return error_;
}

// ---------------------------------------------------------------------------------------------- recv side

ShmRecvComm::ShmRecvComm(Fd socket, std::unique_ptr<RingMapping> mapping, pid_t peer_pid, uint64_t remote_id,
                         std::string peer)
    : socket_(std::move(socket)), mapping_(std::move(mapping)), peer_pid_(peer_pid), remote_id_(remote_id), peer_(std::move(peer)) {}

Status ShmRecvComm::irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags, const MemoryRegion* const*,
                          Request** request) {
  *request = nullptr;
  if (!error_.isOk()) return error_;
  RecvRequest* slot;
  MSC_RETURN_IF_ERROR(claimReceiveSlot(pool_, n, data, sizes, tags, &slot));
  if (slot == nullptr) return Status::ok();
  for (int i = 0; i < n; ++i) {
    Message m{};
    m.request = slot;
    messages_.push_back(m);
  }
  *request = slot;
  bool moved;
  return progress(&moved);
}

Status ShmRecvComm::pullRemote(Message& m) {
  uint8_t* dst = m.request->posted.data[m.sub];
  while (m.received < m.record.size) {
    iovec local{dst + m.received, m.record.size - m.received};
    iovec remote{reinterpret_cast<void*>(m.record.address + m.received), m.record.size - m.received};
    ssize_t n = process_vm_readv(peer_pid_, &local, 1, &remote, 1, 0);
    if (n <= 0) {
      int err = errno;
      return Status(err == ESRCH ? ErrorCode::kPeerLost : ErrorCode::kSystem,
                    "reading " + std::to_string(m.record.size) + " bytes from the sender's memory failed: " + errnoText(err));
    }
    m.received += static_cast<uint64_t>(n);
  }
  mapping_->ring().header()->acks.fetch_add(1, std::memory_order_release);
  return Status::ok();
}

Status ShmRecvComm::progress(bool* moved) {
  *moved = false;
  if (!error_.isOk()) return error_;
  shm::Ring& ring = mapping_->ring();
  while (!messages_.empty()) {
    Message& m = messages_.front();
    if (!m.have_record) {
      if (ring.available() < sizeof(shm::Record)) return Status::ok();
      ring.read(reinterpret_cast<uint8_t*>(&m.record), sizeof(shm::Record));
      m.have_record = true;
      *moved = true;
      Status s = m.record.kind > shm::kRemote
                     ? Status(ErrorCode::kPeerLost, "malformed record in the shared ring")
                     : m.request->posted.match(m.record.tag, m.record.size, &m.sub);
      if (!s.isOk()) {
        error_ = Status(s.code(), "shm recv from " + peer_ + ": " + s.message());
        return error_;
      }
    }
    if (m.record.kind == shm::kRemote) {
      Status s = pullRemote(m);
      if (!s.isOk()) {
        error_ = Status(s.code(), "shm recv from " + peer_ + ": " + s.message());
        return error_;
      }
    } else if (m.received < m.record.size) {
      size_t n = ring.read(m.request->posted.data[m.sub] + m.received, m.record.size - m.received);
      m.received += n;
      *moved = *moved || n > 0;
      if (m.received < m.record.size) return Status::ok();
    }
    *moved = true;
    if (--m.request->posted.messages_left == 0) m.request->done = true;
    messages_.pop_front();
  }
  return Status::ok();
}

Status ShmRecvComm::test(Request* request, bool* done, size_t* sizes) {
  *done = false;
  auto* r = static_cast<RecvRequest*>(request);
  if (r == nullptr || !r->in_use) return Status(ErrorCode::kInvalidArgument, "shm test: not an active recv request");
  bool moved;
  MSC_RETURN_IF_ERROR(progress(&moved));
  if (r->done) {
    *done = true;
    if (sizes != nullptr) r->posted.copySizes(sizes);
    r->in_use = false;
    idle_tests_ = 0;
    return Status::ok();
  }
  // The sender may have written everything and exited: only an empty ring after the hang-up is a loss.
  if (peerGone(moved, &idle_tests_, socket_.get()) && mapping_->ring().available() == 0) {
    error_ = Status(ErrorCode::kPeerLost, "shm recv from " + peer_ + ": the sending process exited");
  }
  return error_;
}

}  // namespace megascale::transport
