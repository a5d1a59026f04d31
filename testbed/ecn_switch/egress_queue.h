// One output port of the emulated switch: a wire of a set rate, a strict-priority control queue and a data
// queue that marks ECN (RED on the queue a frame leaves behind, at dequeue, as the simulator's switch does:
// congestion/ecn_marking.h) and drops at its tail when its buffer is full. Clock-free: the caller says what time
// it is, so tests drive it on virtual time and the switch on the monotonic clock.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "congestion/ecn_marking.h"

namespace megascale::testbed {

using Frame = std::vector<uint8_t>;

struct EgressConfig {
  double rate_bps = 1e9;
  uint64_t buffer_bytes = 1 << 20;  // the data queue's drop-tail limit
  bool marks_ecn = true;
  congestion::EcnThresholds ecn;
  uint64_t seed = 1;  // the marking draws'
};

struct EgressStats {
  uint64_t frames = 0, bytes = 0;  // sent, data and control (bytes as on the wire, overhead included)
  uint64_t marks = 0, drops = 0;   // data frames marked CE, data frames refused by a full buffer
  uint64_t peak_queue_bytes = 0;   // the data queue's largest, ever (dataQueueBytes)
};

class EgressQueue {
 public:
  /// Preamble, start-of-frame delimiter, FCS and the inter-frame gap: what an Ethernet frame costs on a wire
  /// beyond the bytes a packet socket sees.
  static constexpr uint64_t kWireOverhead = 24;

  explicit EgressQueue(const EgressConfig& config);

  /// Queues a frame that arrived at `now_ns`; false when the data queue's buffer refused it (dropped).
  bool push(Frame frame, int64_t now_ns);
  /// The next frame whose last bit has left the wire by `now_ns` (store and forward), or nothing. Call until it
  /// returns nothing; a frame never leaves before the one ahead of it has finished.
  std::optional<Frame> pop(int64_t now_ns);
  /// When pop will next return a frame; INT64_MAX while both queues are empty.
  int64_t nextDeparture() const;
  /// When the frame pop returned last left the wire (its departure; 0 before the first).
  int64_t lastDeparture() const { return wire_free_ns_; }

  /// The data frames waiting, the one on the wire not counted (the simulator's ports count their queues so).
  uint64_t dataQueueBytes() const { return waitingBytes(); }
  /// The data queue's largest since the last call (or since it was made); the next interval starts from its
  /// length now. The queue only grows in push, so that is where its peak is kept.
  uint64_t takeIntervalPeak();
  const EgressStats& stats() const { return stats_; }

 private:
  struct Queued {
    Frame frame;
    int64_t arrived_ns;
  };
  int64_t serialization(size_t frame_bytes) const;
  std::deque<Queued>* headQueue();
  const std::deque<Queued>* headQueue() const;
  uint64_t waitingBytes() const;

  EgressConfig config_;
  std::deque<Queued> control_, data_;
  uint64_t data_bytes_ = 0;  // bytes of the data frames in the queue, the one on the wire included
  uint64_t interval_peak_ = 0;  // dataQueueBytes' largest since takeIntervalPeak
  int64_t wire_free_ns_ = 0;  // when the last frame sent finished
  std::mt19937_64 random_;
  std::uniform_real_distribution<double> uniform_{0.0, 1.0};
  EgressStats stats_;
};

}  // namespace megascale::testbed
