#include "testbed/ecn_switch/ecn_switch.h"

#include <poll.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <utility>

namespace megascale::testbed {
namespace {

constexpr int kReceiveBatch = 64;

int64_t monotonicNs() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

uint64_t macAt(const uint8_t* bytes) {
  uint64_t mac = 0;
  for (int i = 0; i < 6; ++i) mac = mac << 8 | bytes[i];
  return mac;
}

}  // namespace

EcnSwitch::EcnSwitch(const SwitchOptions& options) : sample_ns_(options.sample_ns) {
  ports_.reserve(options.ports.size());
  for (size_t i = 0; i < options.ports.size(); ++i) {
    EgressConfig config = options.egress;
    config.seed += i;  // ports draw independently
    ports_.push_back({std::make_unique<PacketPort>(options.ports[i]), EgressQueue(config)});
  }
  if (!options.queue_log.empty()) {
    log_ = std::fopen(options.queue_log.c_str(), "w");
    if (log_ == nullptr) throw std::runtime_error("ecn switch: queue log " + options.queue_log + ": " + std::strerror(errno));
    std::fprintf(log_, "time_s,port,queue_bytes,peak_queue_bytes,bytes,marks,drops,stalls,stalled_us\n");
  }
  // A frame of 9000 bytes takes 72 us at 1 Gbit/s: the kernel's default 50 us timer slack would be most of it.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
}

EcnSwitch::~EcnSwitch() {
  if (log_ != nullptr) std::fclose(log_);
}

void EcnSwitch::forward(Frame frame, size_t in, int64_t now_ns) {
  if (frame.size() < 14) return;
  port_of_address_[macAt(frame.data() + 6)] = in;
  const bool group = frame[0] & 1;  // broadcast or multicast
  const auto known = group ? port_of_address_.end() : port_of_address_.find(macAt(frame.data()));
  if (known != port_of_address_.end()) {
    if (known->second != in) ports_[known->second].queue.push(std::move(frame), now_ns);
    return;
  }
  for (size_t out = 0; out < ports_.size(); ++out) {
    if (out != in) ports_[out].queue.push(frame, now_ns);
  }
}

// What the ports have read is replayed in the order it came off the cables, each frame at its arrival: the
// frames due to leave before it leave first. A process that reads late (descheduled, busy) thus neither loses
// the wire time in between nor counts, marks or drops against frames that a hardware switch would have sent.
void EcnSwitch::receive(const std::vector<size_t>& readable, int64_t now_ns) {
  std::vector<std::pair<ReceivedFrame, size_t>> arrivals;
  for (size_t in : readable) {
    for (ReceivedFrame& r : ports_[in].socket->receive(kReceiveBatch, now_ns)) arrivals.emplace_back(std::move(r), in);
  }
  std::stable_sort(arrivals.begin(), arrivals.end(),
                   [](const auto& a, const auto& b) { return a.first.arrived_ns < b.first.arrived_ns; });
  for (auto& [r, in] : arrivals) {
    transmitDue(r.arrived_ns, now_ns);
    forward(std::move(r.frame), in, r.arrived_ns);
  }
}

void EcnSwitch::transmitDue(int64_t due_ns, int64_t real_ns) {
  for (Port& port : ports_) {
    while (auto frame = port.queue.pop(due_ns)) {
      if (!port.socket->send(*frame)) ++port.send_failures;
      port.wake_lateness_ns = std::max(port.wake_lateness_ns, real_ns - port.queue.lastDeparture());
    }
  }
}

void EcnSwitch::countStalls() {
  for (Port& port : ports_) {
    if (port.wake_lateness_ns <= kStallNs) {
      port.stall_ns = 0;
    } else if (port.stall_ns == 0) {
      ++port.stalls;
      port.stall_ns = port.wake_lateness_ns;
      port.stalled_ns += port.stall_ns;
    } else if (port.wake_lateness_ns > port.stall_ns) {  // its backlog's older frames came in only now
      port.stalled_ns += port.wake_lateness_ns - port.stall_ns;
      port.stall_ns = port.wake_lateness_ns;
    }
    port.wake_lateness_ns = 0;
  }
}

void EcnSwitch::sample(int64_t now_ns) {
  if (now_ns < next_sample_ns_) return;
  next_sample_ns_ = now_ns + sample_ns_;
  for (Port& port : ports_) {
    const uint64_t peak = port.queue.takeIntervalPeak();
    if (log_ != nullptr) {
      const EgressStats& s = port.queue.stats();
      std::fprintf(log_, "%.6f,%s,%llu,%llu,%llu,%llu,%llu,%llu,%.0f\n", static_cast<double>(now_ns - start_ns_) * 1e-9,
                   port.socket->name().c_str(), static_cast<unsigned long long>(port.queue.dataQueueBytes()),
                   static_cast<unsigned long long>(peak), static_cast<unsigned long long>(s.bytes),
                   static_cast<unsigned long long>(s.marks), static_cast<unsigned long long>(s.drops),
                   static_cast<unsigned long long>(port.stalls), static_cast<double>(port.stalled_ns) * 1e-3);
    }
  }
  if (log_ != nullptr) std::fflush(log_);  // whoever reads it during a run sees every sample so far
}

void EcnSwitch::run(const std::atomic<bool>& stop) {
  std::vector<pollfd> fds;
  std::vector<size_t> readable;
  for (const Port& port : ports_) fds.push_back({port.socket->fd(), POLLIN, 0});
  start_ns_ = next_sample_ns_ = monotonicNs();
  while (!stop.load(std::memory_order_relaxed)) {
    int64_t now = monotonicNs();
    transmitDue(now, now);
    sample(now);
    countStalls();
    int64_t wake = next_sample_ns_;
    for (const Port& port : ports_) wake = std::min(wake, port.queue.nextDeparture());
    const int64_t wait = std::max<int64_t>(0, wake - now);
    const timespec timeout{wait / 1'000'000'000, wait % 1'000'000'000};
    if (ppoll(fds.data(), fds.size(), &timeout, nullptr) < 0 && errno != EINTR) {
      throw std::runtime_error(std::string("ecn switch: poll: ") + std::strerror(errno));
    }
    now = monotonicNs();
    readable.clear();
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents != 0) readable.push_back(i);
    }
    if (!readable.empty()) receive(readable, now);
  }
  if (log_ != nullptr) std::fflush(log_);
}

void EcnSwitch::printSummary(std::FILE* out) {
  for (Port& port : ports_) {
    const EgressStats& s = port.queue.stats();
    std::fprintf(out, "port %s frames=%llu bytes=%llu marks=%llu drops=%llu peak_queue_bytes=%llu socket_drops=%llu "
                 "cable_drops=%llu stalls=%llu stalled_us=%.0f\n", port.socket->name().c_str(),
                 static_cast<unsigned long long>(s.frames),
                 static_cast<unsigned long long>(s.bytes), static_cast<unsigned long long>(s.marks),
                 static_cast<unsigned long long>(s.drops), static_cast<unsigned long long>(s.peak_queue_bytes),
                 static_cast<unsigned long long>(port.socket->socketDrops()),
                 static_cast<unsigned long long>(port.send_failures),
                 static_cast<unsigned long long>(port.stalls), static_cast<double>(port.stalled_ns) * 1e-3);
  }
  std::fflush(out);
}

}  // namespace megascale::testbed
