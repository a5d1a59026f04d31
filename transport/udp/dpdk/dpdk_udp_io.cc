#include "transport/udp/dpdk/dpdk_udp_io.h"

#include <linux/filter.h>
#include <net/if.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "common/status.h"
#include "transport/udp/dpdk/dpdk_module.h"
#include "transport/udp/dpdk/dpdk_runtime.h"

namespace megascale::transport {

namespace {

constexpr size_t kFramesPerBatch = 32;
constexpr int kBatchesPerWait = 16;
constexpr int64_t kLongestSleepNs = 100'000'000;

// The kernel socket keeps whole what came over loopback (another process of this host) and the first bytes of
// the rest: DPDK's af_packet device takes the rail's frames before the kernel's stack does, so those bytes
// arriving on the socket say a frame is waiting in the device's ring - a doorbell that lets an idle engine sleep
// in epoll instead of polling, and tells when the frame arrived (ArrivalStamps). On a loopback rail DPDK sees
// every frame, and the socket is only a doorbell. (The filter's length counts the UDP header the kernel keeps.)
void filterKernelSocket(int fd, bool rail_is_loopback) {
  const auto loopback = static_cast<uint32_t>(if_nametoindex("lo"));
  sock_filter program[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, static_cast<uint32_t>(SKF_AD_OFF + SKF_AD_IFINDEX)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, rail_is_loopback ? UINT32_MAX : loopback, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, UINT32_MAX),
      BPF_STMT(BPF_RET | BPF_K, static_cast<uint32_t>(udp_frame::kUdpBytes + ArrivalStamps::kDoorbellBytes)),
  };
  sock_fprog filter{static_cast<unsigned short>(sizeof(program) / sizeof(program[0])), program};
  if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &filter, sizeof(filter)) != 0) {
    throw Error(ErrorCode::kSystem, "udp: DPDK: filtering a flow's kernel socket: " + errnoText(errno));
  }
}

// Where a frame's UDP payload is (the port parsed it before handing it over: l2_len and l3_len say).
ArrivedDatagram datagramOf(rte_mbuf* m) {
  const uint8_t* frame = rte_pktmbuf_mtod(m, const uint8_t*);
  const size_t udp_offset = m->l2_len + m->l3_len;
  const size_t udp_bytes = static_cast<size_t>(frame[udp_offset + 4] << 8 | frame[udp_offset + 5]);
  return {frame + udp_offset + udp_frame::kUdpBytes, udp_bytes - udp_frame::kUdpBytes, frame[m->l2_len + 1], 0};
}

}  // namespace

DpdkUdpIo::DpdkUdpIo(const UdpIoSetup& setup)
    : tos_(static_cast<uint8_t>(setup.traffic_class >= 0 ? setup.traffic_class & 0xfc : 0)),  // writeUdp adds ECT(0)
      send_batch_(setup.send_batch), spin_ns_(setup.dpdk_spin_us * 1000) {
  try {
    for (const std::string& ipv4 : setup.rails) {
      rails_.push_back(std::make_unique<Rail>());
      Rail& rail = *rails_.back();
      rail.port = DpdkRuntime::instance().port(ipv4, setup.dpdk_eal_args);
      for (int i = 0; i < setup.flows; ++i) {
        auto socket = std::make_unique<UdpSocket>(ipv4, setup.traffic_class);
        filterKernelSocket(socket->fd(), rail.port->interface() == "lo");
        waiter_.add(socket->fd(), static_cast<uint32_t>(kernel_sockets_.size()));
        rail.port->claim(socket->endpoint().port, &rail.inbox);
        endpoints_.push_back(socket->endpoint());
        kernel_sockets_.push_back(std::move(socket));
        rail_of_flow_.push_back(&rail);
        pending_.emplace_back();
        pending_.back().reserve(static_cast<size_t>(send_batch_));
        full_.push_back(0);
      }
    }
  } catch (...) {
    release();
    throw;
  }
  arrived_.reserve(kFramesPerBatch);
}

DpdkUdpIo::~DpdkUdpIo() {
  MSC_LOG_DEBUG("udp: DPDK io: %llu frames received, %llu of them with their doorbell's arrival time",
                static_cast<unsigned long long>(frames_received_), static_cast<unsigned long long>(frames_stamped_));
  release();
}

void DpdkUdpIo::release() {
  for (size_t i = 0; i < endpoints_.size(); ++i) rail_of_flow_[i]->port->release(endpoints_[i].port);
  endpoints_.clear();
  // No port hands this io a frame any more: every frame it holds goes back to its pool before the ports close.
  for (std::vector<rte_mbuf*>& frames : pending_) {
    for (rte_mbuf* m : frames) rte_pktmbuf_free(m);
    frames.clear();
  }
  freeHeld();
  for (rte_mbuf* m : staged_) rte_pktmbuf_free(m);
  staged_.clear();
  for (auto& rail : rails_) {
    for (rte_mbuf* m : rail->inbox.frames) rte_pktmbuf_free(m);
    rail->inbox.frames.clear();
  }
}

void DpdkUdpIo::freeHeld() {
  for (rte_mbuf* m : held_) rte_pktmbuf_free(m);
  held_.clear();
}

bool DpdkUdpIo::send(int flow, const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                     size_t payload_bytes) {
  const auto i = static_cast<size_t>(flow);
  if (full_[i]) return false;
  DpdkPort& port = *rail_of_flow_[i]->port;
  if (std::shared_ptr<DpdkPort> local = DpdkRuntime::instance().localPort(to.sin_addr.s_addr)) {
    // To this host: this process's own ios without the wire, another process's through the kernel.
    if (!local->claimed(to.sin_port)) return kernel_sockets_[i]->send(to, head, head_bytes, payload, payload_bytes);
    rte_mbuf* m = port.frame(to, endpoints_[i].port, tos_, head, head_bytes, payload, payload_bytes, true);
    if (m == nullptr) {
      ++lost_sends_;
    } else {
      local->deliverLocally(m);
    }
    return true;
  }
  rte_mbuf* m = port.frame(to, endpoints_[i].port, tos_, head, head_bytes, payload, payload_bytes, false);
  if (m == nullptr) {  // no MAC yet (asked) or no frame free: lost, as on a wire
    ++lost_sends_;
    return true;
  }
  pending_[i].push_back(m);
  if (pending_[i].size() >= static_cast<size_t>(send_batch_)) flush(i);
  return true;
}

void DpdkUdpIo::flush(size_t flow) {
  std::vector<rte_mbuf*>& frames = pending_[flow];
  if (frames.empty()) return;
  const int sent = rail_of_flow_[flow]->port->transmit(frames.data(), static_cast<int>(frames.size()));
  for (size_t k = static_cast<size_t>(sent); k < frames.size(); ++k) rte_pktmbuf_free(frames[k]);
  if (static_cast<size_t>(sent) < frames.size()) {
    lost_sends_ += frames.size() - static_cast<size_t>(sent);
    full_[flow] = 1;
  }
  frames.clear();
}

void DpdkUdpIo::endRound() {
  for (size_t i = 0; i < pending_.size(); ++i) {
    flush(i);
    full_[i] = 0;
  }
}

bool DpdkUdpIo::pollRails() {
  const size_t before = staged_.size();
  for (auto& rail : rails_) rail->port->poll(rail->inbox, &staged_, before + kFramesPerBatch);
  return staged_.size() > before;
}

void DpdkUdpIo::wait(int64_t timeout_ns) {
  freeHeld();
  budget_ = kBatchesPerWait;
  readable_.clear();
  const int64_t deadline = monotonicNowNs() + timeout_ns;
  for (;;) {
    const int64_t now = monotonicNowNs();
    if (!staged_.empty() || pollRails()) {
      last_frame_ns_ = now;
      // The kernel sockets are read too: doorbells left unread would fill them, and same-host datagrams
      // behind them would be dropped.
      waiter_.wait(0, &readable_);
      return;
    }
    // Polling for `spin_ns_` after the last frame (a round trip's answer is due), then asleep until the next
    // timer, a doorbell or a wake.
    const int64_t sleep = now - last_frame_ns_ < spin_ns_ ? 0 : std::clamp<int64_t>(deadline - now, 0, kLongestSleepNs);
    if (waiter_.wait(sleep, &readable_) || monotonicNowNs() >= deadline) return;
  }
}

std::span<const ArrivedDatagram> DpdkUdpIo::receive(bool* pass_ended) {
  // Frames come off the wire in the order they arrived, every flow's together: each batch is a pass.
  *pass_ended = false;
  freeHeld();
  if (budget_-- <= 0) return {};
  arrived_.clear();
  // The doorbells of frames that came since the wait are read before those frames are handed out; with no
  // frame waiting there is nothing to stamp, and the sockets are left to the next wait.
  if (readable_.empty() && (!staged_.empty() || pollRails())) {
    for (uint32_t i = 0; i < kernel_sockets_.size(); ++i) readable_.push_back(i);
  }
  while (!readable_.empty()) {  // another process of this host, through the kernel
    const int n = kernel_sockets_[readable_.back()]->receive(kernel_batch_);
    if (!kernel_batch_.mayHoldMore()) readable_.pop_back();
    for (int i = 0; i < n; ++i) {
      if (kernel_batch_.size(i) > ArrivalStamps::kDoorbellBytes) {  // a doorbell is shorter than any datagram of ours
        arrived_.push_back({kernel_batch_.data(i), kernel_batch_.size(i), kernel_batch_.tos(i), 0});
      } else {
        stamps_.onDoorbell(kernel_batch_.data(i), kernel_batch_.size(i), kernel_batch_.arrivedRealtimeNs(i));
      }
    }
    if (!arrived_.empty()) {
      *pass_ended = true;
      return arrived_;
    }
  }
  if (staged_.empty()) pollRails();
  std::swap(held_, staged_);
  const int64_t realtime_ns = realtimeNowNs();
  for (rte_mbuf* m : held_) {
    ArrivedDatagram d = datagramOf(m);
    d.waited_ns = waitedSinceStamp(realtime_ns, stamps_.take(d.data, d.size));
    frames_stamped_ += d.waited_ns > 0;
    ++frames_received_;
    arrived_.push_back(d);
  }
  *pass_ended = !arrived_.empty();
  return arrived_;
}

void DpdkUdpIo::wake() { waiter_.wake(); }

}  // namespace megascale::transport

extern "C" megascale::transport::UdpIo* megascale_udp_dpdk_open(const megascale::transport::UdpIoSetup* setup,
                                                                char* error, size_t error_bytes) {
  try {
    return new megascale::transport::DpdkUdpIo(*setup);
  } catch (const std::exception& e) {
    std::snprintf(error, error_bytes, "%s", e.what());
    return nullptr;
  }
}
