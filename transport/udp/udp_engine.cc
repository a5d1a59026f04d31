#include "transport/udp/udp_engine.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "common/crypto.h"
#include "common/log.h"
#include "common/status.h"

namespace megascale::transport {

namespace {
constexpr uint32_t kWakeTag = UINT32_MAX;
constexpr int kBatchesPerSocket = 8;  // per wake: one busy flow must not starve the timers of the others
}  // namespace

UdpEngine::UdpEngine(const std::vector<std::string>& rails, int flows, int traffic_class, int send_batch)
    : send_batch_(send_batch), epoll_(epoll_create1(EPOLL_CLOEXEC)), wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      start_(std::chrono::steady_clock::now()) {
  if (!epoll_.valid() || !wake_.valid()) throw Error(ErrorCode::kSystem, "udp: epoll or eventfd: " + errnoText(errno));
  for (const std::string& ipv4 : rails) {
    for (int i = 0; i < flows; ++i) {
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u32 = static_cast<uint32_t>(sockets_.size());
      sockets_.push_back(std::make_unique<UdpSocket>(ipv4, traffic_class));
      endpoints_.push_back(sockets_.back()->endpoint());
      batches_.emplace_back(send_batch);
      socket_full_.push_back(0);
      epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, sockets_.back()->fd(), &e);
    }
  }
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u32 = kWakeTag;
  epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &e);
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

void UdpEngine::wake() { signalEventFd(wake_.get()); }

Picoseconds UdpEngine::now() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start_).count() *
         kNanosecond;
}

bool UdpEngine::send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                     size_t payload_bytes) {
  const auto i = static_cast<size_t>(flow);
  if (send_batch_ <= 1) return sockets_[i]->send(to, head, head_bytes, payload, payload_bytes);
  if (socket_full_[i]) return false;
  if (batches_[i].full()) flush(i);
  if (socket_full_[i]) return false;
  batches_[i].add(to, head, head_bytes, payload, payload_bytes);
  return true;
}

void UdpEngine::flush(size_t flow) {
  const int lost = batches_[flow].flush(*sockets_[flow]);
  if (lost > 0) {
    lost_sends_ += static_cast<uint64_t>(lost);
    socket_full_[flow] = 1;
  }
}

void UdpEngine::endRound() {
  for (size_t i = 0; i < batches_.size(); ++i) {
    if (!batches_[i].empty()) flush(i);
    socket_full_[i] = 0;
  }
}

void UdpEngine::receiveFrom(UdpSocket& socket, ReceiveBatch& batch) {
  std::vector<UdpHalf*>& touched = touched_;
  for (int round = 0; round < kBatchesPerSocket; ++round) {
    const int n = socket.receive(batch);
    const Picoseconds now = this->now();
    timespec realtime{};
    clock_gettime(CLOCK_REALTIME, &realtime);
    const int64_t realtime_ns = static_cast<int64_t>(realtime.tv_sec) * 1'000'000'000 + realtime.tv_nsec;
    touched.clear();
    for (int i = 0; i < n; ++i) {
      udp_wire::Header h;
      if (!udp_wire::parseHeader(batch.data(i), batch.size(i), &h)) continue;  // not ours: dropped
      auto it = halves_.find(h.connection);
      if (it == halves_.end()) continue;
      // The kernel's receive time on our clock; a missing or implausible one (a clock step) counts as now.
      const int64_t waited_ns = batch.arrivedRealtimeNs(i) > 0 ? realtime_ns - batch.arrivedRealtimeNs(i) : 0;
      const Picoseconds arrived = waited_ns > 0 && waited_ns < 1'000'000'000 ? now - waited_ns * kNanosecond : now;
      it->second->onPacket(h, batch.data(i), batch.size(i), batch.tos(i), arrived);
      if (std::find(touched.begin(), touched.end(), it->second) == touched.end()) touched.push_back(it->second);
    }
    const Picoseconds done = this->now();
    for (UdpHalf* half : touched) half->endOfBatch(done);
    endRound();  // the batch's acknowledgements leave before the next receive
    if (n < ReceiveBatch::kDatagrams) return;
  }
}

void UdpEngine::run() {
  ReceiveBatch batch;
  epoll_event events[64];
  Picoseconds next = kNever;
  while (!stopping_.load()) {
    const Picoseconds wait = next == kNever ? 100 * kMillisecond : std::clamp<Picoseconds>(next - now(), 0, kSecond);
    timespec timeout{static_cast<time_t>(wait / kSecond), static_cast<long>((wait % kSecond) / kNanosecond)};
    const int n = epoll_pwait2(epoll_.get(), events, 64, &timeout, nullptr);
    std::lock_guard<std::mutex> guard(mutex_);
    for (int i = 0; i < n; ++i) {
      const uint32_t tag = events[i].data.u32;
      if (tag == kWakeTag) {
        uint64_t count;
        (void)!read(wake_.get(), &count, sizeof(count));
      } else {
        receiveFrom(*sockets_[tag], batch);
      }
    }
    const Picoseconds now = this->now();
    next = kNever;
    for (auto& [id, half] : halves_) next = std::min(next, half->step(now));
    endRound();
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
