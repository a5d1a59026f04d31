#include "transport/udp/udp_comm.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace megascale::transport {

ReadySignal::ReadySignal() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!fd_.valid()) throw Error(ErrorCode::kSystem, "udp: eventfd: " + errnoText(errno));
}

std::function<void()> ReadySignal::notifier() const {
  const int fd = fd_.get();
  return [fd] { signalEventFd(fd); };
}

void ReadySignal::drain() const {
  uint64_t count;
  (void)!read(fd_.get(), &count, sizeof(count));
}

namespace {

// Whether a request is done (`flag`, which the engine sets), read under its lock; the connection's error first.
template <typename Half>
Status readDone(const UdpEnd<Half>& end, const bool& flag, bool* done) {
  end.ready->drain();
  std::lock_guard<std::mutex> guard(end.engine->mutex());
  if (!end.half->error().isOk()) return end.half->error();
  *done = flag;
  return Status::ok();
}

// A waiter on a comm with requests pending sleeps on the engine's signal and the peer's setup socket.
template <typename Half>
void appendWaitFds(const UdpEnd<Half>& end, const PeerWatch& watch, bool pending, std::vector<pollfd>& fds) {
  if (!pending) return;  // nothing pending: nothing to wait on
  fds.push_back(pollfd{end.ready->fd(), POLLIN, 0});
  fds.push_back(pollfd{watch.link().fd(), POLLIN, 0});
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Send side.

UdpSendComm::UdpSendComm(UdpEnd<UdpSender> end, OobLink link)
    : watch_(std::move(link), kSendAckGrace), end_(std::move(end)) {}

Status UdpSendComm::isend(const void* data, size_t size, uint32_t tag, const MemoryRegion*, Request** request) {
  *request = nullptr;
  Slot* slot = pool_.free();
  if (slot == nullptr) return Status::ok();  // every slot busy: the caller retries after test()
  {
    std::lock_guard<std::mutex> guard(end_.engine->mutex());
    if (!end_.half->error().isOk()) return end_.half->error();
    slot->message = UdpOutgoing{};
    slot->message.data = static_cast<const uint8_t*>(data);
    slot->message.size = size;
    slot->message.tag = tag;
    end_.half->post(&slot->message);
  }
  slot->in_use = true;
  end_.engine->wake();
  *request = slot;
  return Status::ok();
}

Status UdpSendComm::test(Request* request, bool* done, size_t* size) {
  *done = false;
  auto* slot = static_cast<Slot*>(request);
  if (slot == nullptr || !slot->in_use) return Status(ErrorCode::kInvalidArgument, "udp test: not an active send request");
  MSC_RETURN_IF_ERROR(readDone(end_, slot->message.done, done));
  if (*done) {
    if (size != nullptr) *size = slot->message.size;
    slot->in_use = false;
    return Status::ok();
  }
  if (!watch_.alive()) return watch_.lost("udp: send to");
  return Status::ok();
}

bool UdpSendComm::appendReadiness(std::vector<pollfd>& fds) const {
  appendWaitFds(end_, watch_, pool_.anyInUse(), fds);
  return true;
}

// ---------------------------------------------------------------------------------------------------------
// Receive side.

UdpRecvComm::UdpRecvComm(UdpEnd<UdpReceiver> end, OobLink link) : watch_(std::move(link)), end_(std::move(end)) {}

Status UdpRecvComm::irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags,
                          const MemoryRegion* const*, Request** request) {
  *request = nullptr;
  ReceiveSlot* slot;
  MSC_RETURN_IF_ERROR(claimReceiveSlot(pool_, n, data, sizes, tags, &slot));
  if (slot == nullptr) return Status::ok();  // every slot busy: the caller retries after test()
  {
    std::lock_guard<std::mutex> guard(end_.engine->mutex());
    if (!end_.half->error().isOk()) {
      slot->in_use = false;
      return end_.half->error();
    }
    end_.half->post(slot);
  }
  end_.engine->wake();  // what it held for this receive is free: the sender hears so
  *request = slot;
  return Status::ok();
}

Status UdpRecvComm::test(Request* request, bool* done, size_t* sizes) {
  *done = false;
  auto* slot = static_cast<ReceiveSlot*>(request);
  if (slot == nullptr || !slot->in_use) return Status(ErrorCode::kInvalidArgument, "udp test: not an active recv request");
  MSC_RETURN_IF_ERROR(readDone(end_, slot->done, done));
  if (*done) {
    if (sizes != nullptr) slot->posted.copySizes(sizes);
    slot->in_use = false;
    return Status::ok();
  }
  if (!watch_.alive()) return watch_.lost("udp: receive from");
  return Status::ok();
}

bool UdpRecvComm::appendReadiness(std::vector<pollfd>& fds) const {
  appendWaitFds(end_, watch_, pool_.anyInUse(), fds);
  return true;
}

}  // namespace megascale::transport
