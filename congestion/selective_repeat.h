// The sender's half of selective repeat: which packets are outstanding, which the receiver has acknowledged
// (each by its own sequence number, SACK style), and which to resend - a packet with `reorder_threshold` packets
// sent after it on the same lane acknowledged (fast retransmit, once per transmission) or one unacknowledged for
// an RTO. A lane is a path that keeps its packets in order (a sprayed flow, a rail): packets of different lanes
// overtake each other by the paths' delay differences and the receiver's order of draining its sockets, which is
// not loss, while a packet overtaken on its own lane was lost. One lane is plain sequence-order fast retransmit.
// Only packets first sent once count as overtaking (Karn: the ack of a resent packet may be its first copy's,
// which left long before). Only lost packets are resent, never the whole window (go-back-N wastes a BDP per loss).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "congestion/sender_control.h"

namespace megascale::congestion {

struct AckOutcome {
  bool new_data = false;  // this ACK acknowledged a packet still outstanding
  bool rtt_valid = false;  // Karn: only a packet sent once gives an RTT sample
  Picoseconds rtt = 0;
};

class SelectiveRepeat {
 public:
  explicit SelectiveRepeat(int reorder_threshold = 3) : reorder_threshold_(reorder_threshold) {}

  /// First transmission or retransmission of `seq`, on `lane`.
  void onSend(uint64_t seq, Picoseconds now, uint16_t lane = 0);
  AckOutcome onAck(uint64_t seq, Picoseconds now);
  /// Packets to resend now, oldest first: overtaken or timed out. Each counts as sent again only when onSend is
  /// called for it.
  std::vector<uint64_t> lost(Picoseconds now, Picoseconds rto);
  /// Only the overtaken ones (fast retransmit), among those below `judge_below`: what the newest acknowledgement
  /// could have reported (a receiver's SACK covers a bounded range; a packet beyond it is unseen, not missing).
  /// Cheap enough for every ACK: it looks only at packets below the highest one acknowledged.
  std::vector<uint64_t> overtaken(uint64_t judge_below = UINT64_MAX);
  /// Only those unacknowledged for `rto` (a scan of everything outstanding: for the retransmit timer).
  std::vector<uint64_t> timedOut(Picoseconds now, Picoseconds rto) const;
  /// The earliest time a timeout can fire for the outstanding packets, kNever if none.
  Picoseconds nextTimeout(Picoseconds rto) const;

  size_t outstanding() const { return outstanding_; }
  /// Every sequence number below this is acknowledged.
  uint64_t cumulativeAck() const { return outstanding_ == 0 ? next_expected_ : base_; }

 private:
  struct Packet {
    Picoseconds sent_at = 0;
    int transmissions = 0;
    bool outstanding = false;         // sent and not acknowledged
    bool fast_retransmitted = false;  // in its current transmission
    uint16_t lane = 0;                // of its current transmission
    uint64_t lane_order = 0;          // its current transmission's place among its lane's, from 1
  };
  // The window [base_, base_ + window_.size()) from the oldest outstanding packet: sequence numbers are sent
  // mostly in order, so a deque indexed by seq - base_ replaces a search tree (no allocation per packet).
  Packet* find(uint64_t seq) {
    return seq >= base_ && seq - base_ < window_.size() ? &window_[seq - base_] : nullptr;
  }
  int reorder_threshold_;
  std::deque<Packet> window_;
  uint64_t base_ = 0;
  size_t outstanding_ = 0;
  struct Lane {
    uint64_t sent = 0;        // transmissions on it
    uint64_t overtaking = 0;  // the latest lane_order acknowledged of a packet sent once
  };
  uint64_t overtaking_end_ = 0;  // one past the highest packet sent once and acknowledged
  std::vector<Lane> lanes_;
  uint64_t next_expected_ = 0;  // one past the highest sequence sent
};

}  // namespace megascale::congestion
