#include "transport/udp/udp_engine.h"

#include <algorithm>

#include "common/crypto.h"
#include "common/status.h"

namespace megascale::transport {

UdpEngine::UdpEngine(const UdpIoSetup& setup)
    : io_(openUdpIo(setup)), start_(std::chrono::steady_clock::now()) {
  thread_ = std::thread([this] { run(); });
}

UdpEngine::~UdpEngine() {
  stopping_.store(true);
  wake();
  thread_.join();
}

uint64_t UdpEngine::newConnectionId() {
  uint64_t id = 0;
  while (id == 0 || halves_.count(id) > 0) randomBytes(&id, sizeof(id));
  return id;
}

void UdpEngine::attach(uint64_t id, UdpHalf* half) {
  halves_[id] = half;
  wake();
}

void UdpEngine::detach(uint64_t id) { halves_.erase(id); }

void UdpEngine::wake() { io_->wake(); }

Picoseconds UdpEngine::now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count() *
         kNanosecond;
}

bool UdpEngine::send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                     size_t payload_bytes) {
  return io_->send(flow, to, head, head_bytes, payload, payload_bytes);
}

void UdpEngine::deliver(std::span<const ArrivedDatagram> batch) {
  const Picoseconds now = this->now();
  for (const ArrivedDatagram& d : batch) {
    udp_wire::Header h;
    if (!udp_wire::parseHeader(d.data, d.size, &h)) continue;  // not ours: dropped
    auto it = halves_.find(h.connection);
    if (it == halves_.end()) continue;
    it->second->onPacket(h, d.data, d.size, d.tos, now - d.waited_ns * kNanosecond);
    if (std::find(touched_.begin(), touched_.end(), it->second) == touched_.end()) touched_.push_back(it->second);
  }
}

void UdpEngine::acknowledge() {
  const Picoseconds done = now();
  for (UdpHalf* half : touched_) half->endOfBatch(done);
  touched_.clear();
  io_->endRound();  // the acknowledgements leave before the next receive
}

void UdpEngine::run() {
  Picoseconds next = kNever;
  while (!stopping_.load()) {
    const Picoseconds wait = next == kNever ? 100 * kMillisecond : std::clamp<Picoseconds>(next - now(), 0, kSecond);
    io_->wait(wait / kNanosecond);
    std::lock_guard<std::mutex> guard(mutex_);
    bool pass_ended = false;
    for (std::span<const ArrivedDatagram> batch = io_->receive(&pass_ended); !batch.empty() || pass_ended;
         batch = io_->receive(&pass_ended)) {
      deliver(batch);
      if (pass_ended) acknowledge();
    }
    acknowledge();
    const Picoseconds now = this->now();
    next = kNever;
    for (auto& [id, half] : halves_) next = std::min(next, half->step(now));
    io_->endRound();
  }
}

UdpAttachment::UdpAttachment(std::shared_ptr<UdpEngine> engine, uint64_t id, UdpHalf* half)
    : engine_(std::move(engine)), id_(id) {
  std::lock_guard<std::mutex> guard(engine_->mutex());
  engine_->attach(id, half);
}

UdpAttachment::~UdpAttachment() {
  std::lock_guard<std::mutex> guard(engine_->mutex());
  engine_->detach(id_);
}

}  // namespace megascale::transport
