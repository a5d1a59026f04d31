// An in-memory network for a udp sender and receiver, on a virtual clock: every datagram is copied, dropped
// with a path's loss probability (or always, for a path cut), and delivered after a delay, in order of delivery
// time, to a half that may get to it later than it arrived (host_delay); the harness steps both halves whenever
// either asked to run. Deterministic for a seed, so the loss
// recovery and path logic are tested without sockets or real time.
#pragma once

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "congestion/sender_control.h"
#include "transport/udp/udp_half.h"

namespace megascale::transport::testing {

class LossyWire {
 public:
  explicit LossyWire(uint64_t seed) : random_(seed) {}

  // One direction's DatagramOut: what a half sends goes to `to_connection` on the other side.
  class End : public DatagramOut {
   public:
    End(LossyWire& wire, int side) : wire_(wire), side_(side) {}
    bool send(int flow, const sockaddr_in&, const void* head, size_t head_bytes, const void* payload,
              size_t payload_bytes) override {
      std::vector<uint8_t> bytes(head_bytes + payload_bytes);
      std::memcpy(bytes.data(), head, head_bytes);
      if (payload_bytes > 0) std::memcpy(bytes.data() + head_bytes, payload, payload_bytes);
      wire_.carry(side_, flow, std::move(bytes));
      return true;
    }

   private:
    LossyWire& wire_;
    int side_;
  };

  /// The halves: side 0 sends to side 1 and back.
  void connect(UdpHalf* side0, UdpHalf* side1) { halves_[0] = side0, halves_[1] = side1; }
  End& end(int side) { return side == 0 ? end0_ : end1_; }

  double loss = 0;                  // every datagram's drop probability
  Picoseconds delay = 50 * kMicrosecond;
  Picoseconds jitter = 20 * kMicrosecond;  // uniform on top of the delay: packets of different paths reorder
  bool paths_keep_order = false;    // a flow's datagrams never overtake each other (the jitter holds back the rest)
  std::set<int> cut_flows;          // flows (either side's) whose datagrams never arrive: cut paths
  uint8_t tos = 0;                  // the TOS every datagram arrives with (3: CE)
  Picoseconds host_delay[2] = {0, 0};  // how late each side's engine gets to a datagram after it arrived
  uint64_t carried = 0, dropped = 0;

  Picoseconds now() const { return now_; }

  /// Runs until `done` or `limit` of virtual time passes; false on the limit.
  template <typename Done>
  bool runUntil(Done&& done, Picoseconds limit) {
    const Picoseconds end = now_ + limit;
    Picoseconds wake[2] = {0, 0};
    while (!done()) {
      for (int side = 0; side < 2; ++side) {
        if (wake[side] <= now_) wake[side] = halves_[side]->step(now_);
      }
      Picoseconds next = std::min(wake[0], wake[1]);
      if (!queue_.empty()) next = std::min(next, queue_.top().at);
      if (next == kNever || next > end) return done();
      now_ = std::max(now_, next);
      bool delivered[2] = {false, false};
      while (!queue_.empty() && queue_.top().at <= now_) {
        const InFlight f = queue_.top();
        queue_.pop();
        udp_wire::Header h;
        if (!udp_wire::parseHeader(f.bytes.data(), f.bytes.size(), &h)) continue;
        halves_[f.to]->onPacket(h, f.bytes.data(), f.bytes.size(), tos, f.arrived);
        delivered[f.to] = true;
        wake[f.to] = now_;  // a packet may open the window or bring an acknowledgement: step it
      }
      for (int side = 0; side < 2; ++side) {
        if (delivered[side]) halves_[side]->endOfBatch(now_);
      }
    }
    return true;
  }

 private:
  struct InFlight {
    Picoseconds at;       // when the receiving half gets to it
    Picoseconds arrived;  // when it reached the receiving host (its kernel timestamp)
    uint64_t order;
    int to;
    std::vector<uint8_t> bytes;
    bool operator<(const InFlight& o) const { return at != o.at ? at > o.at : order > o.order; }
  };
  void carry(int from, int flow, std::vector<uint8_t> bytes) {
    std::uniform_real_distribution<double> uniform(0, 1);
    if (cut_flows.count(flow) > 0 || uniform(random_) < loss) {
      ++dropped;
      return;
    }
    ++carried;
    const auto spread = static_cast<Picoseconds>(uniform(random_) * static_cast<double>(jitter));
    Picoseconds arrived = now_ + delay + spread;
    if (paths_keep_order) {
      Picoseconds& last = last_arrival_[{from, flow}];
      arrived = last = std::max(arrived, last);
    }
    queue_.push(InFlight{arrived + host_delay[1 - from], arrived, order_++, 1 - from, std::move(bytes)});
  }

  std::mt19937_64 random_;
  UdpHalf* halves_[2] = {nullptr, nullptr};
  End end0_{*this, 0}, end1_{*this, 1};
  std::priority_queue<InFlight> queue_;
  std::map<std::pair<int, int>, Picoseconds> last_arrival_;  // by sending side and flow
  uint64_t order_ = 0;
  Picoseconds now_ = 0;
};

}  // namespace megascale::transport::testing
