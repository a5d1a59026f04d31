#include "testbed/ecn_switch/egress_queue.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <utility>

#include "testbed/ecn_switch/frame_ecn.h"

namespace megascale::testbed {

EgressQueue::EgressQueue(const EgressConfig& config) : config_(config), random_(config.seed) {}

int64_t EgressQueue::serialization(size_t frame_bytes) const {
  return static_cast<int64_t>(std::ceil(static_cast<double>(frame_bytes + kWireOverhead) * 8e9 / config_.rate_bps));
}

bool EgressQueue::push(Frame frame, int64_t now_ns) {
  if (classify(frame.data(), frame.size()) == FrameClass::kControl) {
    control_.push_back({std::move(frame), now_ns});
    return true;
  }
  const uint64_t bytes = frame.size() + kWireOverhead;
  const bool wire_busy = !data_.empty();
  if (waitingBytes() + bytes > config_.buffer_bytes) {
    ++stats_.drops;
    return false;
  }
  data_.push_back({std::move(frame), now_ns});
  data_bytes_ += bytes;
  // A frame that finds the wire idle counts until it goes on it, as one that arrives at an idle simulated port
  // does.
  const uint64_t queued = wire_busy ? waitingBytes() : bytes;
  stats_.peak_queue_bytes = std::max(stats_.peak_queue_bytes, queued);
  interval_peak_ = std::max(interval_peak_, queued);
  return true;
}

// The head of the data queue is on the wire (or about to be: the wire is idle when it arrives); it stays in
// data_bytes_ until its last bit has left, but it has left the buffer.
uint64_t EgressQueue::waitingBytes() const {
  return data_.empty() ? 0 : data_bytes_ - (data_.front().frame.size() + kWireOverhead);
}

uint64_t EgressQueue::takeIntervalPeak() {
  const uint64_t peak = interval_peak_;
  interval_peak_ = waitingBytes();
  return peak;
}

std::deque<EgressQueue::Queued>* EgressQueue::headQueue() {
  return const_cast<std::deque<Queued>*>(std::as_const(*this).headQueue());
}

// Strict priority, decided when the wire frees: a control frame that has arrived by then goes before data.
const std::deque<EgressQueue::Queued>* EgressQueue::headQueue() const {
  if (!control_.empty() && (data_.empty() || control_.front().arrived_ns <= std::max(wire_free_ns_, data_.front().arrived_ns))) {
    return &control_;
  }
  return data_.empty() ? nullptr : &data_;
}

int64_t EgressQueue::nextDeparture() const {
  const std::deque<Queued>* queue = headQueue();
  if (queue == nullptr) return INT64_MAX;
  const Queued& head = queue->front();
  return std::max(wire_free_ns_, head.arrived_ns) + serialization(head.frame.size());
}

std::optional<Frame> EgressQueue::pop(int64_t now_ns) {
  const int64_t departure = nextDeparture();
  if (departure > now_ns) return std::nullopt;
  std::deque<Queued>* queue = headQueue();
  Frame frame = std::move(queue->front().frame);
  queue->pop_front();
  const uint64_t bytes = frame.size() + kWireOverhead;
  if (queue == &data_) {
    data_bytes_ -= bytes;
    if (config_.marks_ecn && congestion::shouldMark(data_bytes_, config_.ecn, uniform_(random_)) &&
        markCongestionExperienced(frame.data(), frame.size())) {
      ++stats_.marks;
    }
  }
  wire_free_ns_ = departure;
  ++stats_.frames;
  stats_.bytes += bytes;
  return frame;
}

}  // namespace megascale::testbed
