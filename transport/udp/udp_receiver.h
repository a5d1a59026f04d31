// The receiving half of a udp connection: data is acknowledged once per receive batch, on the path of the
// batch's last packet (its sequence number and send time echoed for the sender's RTT, the cumulative number and
// a SACK bitmap for the others, ECN's CE echoed if any packet of the batch carried it and, for DCQCN, a CNP at
// most every 50 us), duplicates dropped by sequence number. Messages take the
// posted receives in message order, as every transport assigns them (PostedReceive matches each to a buffer by
// tag); a packet lands straight in its buffer, or, for a message no receive has taken yet, is held until one
// is posted - and what is held counts against the sender's window, so a receiver that posts late costs memory
// up to the window and no more. Bytes from the network are checked before they are trusted.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "congestion/cnp_generator.h"
#include "transport/posted_receive.h"
#include "transport/udp/udp_half.h"
#include "transport/udp/udp_paths.h"

namespace megascale::transport {

struct UdpReceiverSetup {
  uint64_t remote_connection = 0;  // the sender's id, in every acknowledgement
  std::string peer;
  uint64_t max_ahead_packets = uint64_t{1} << 22;  // packets beyond the cumulative number it keeps track of
};

class UdpReceiver : public UdpHalf {
 public:
  UdpReceiver(const UdpReceiverSetup& setup, UdpPaths paths, DatagramOut& out, std::function<void()> notify);
  /// Its buffers take the next messages, in order (engine lock held).
  void post(ReceiveSlot* slot);
  const Status& error() const { return error_; }

  void onPacket(const udp_wire::Header& header, const uint8_t* datagram, size_t size, uint8_t tos,
                Picoseconds arrived) override;
  void endOfBatch(Picoseconds now) override;
  Picoseconds step(Picoseconds now) override;

  uint64_t heldBytes() const { return held_bytes_; }
  uint64_t duplicates() const { return duplicates_; }
  uint64_t malformed() const { return malformed_; }

 private:
  struct Incoming {
    uint32_t tag = 0;
    uint64_t size = 0;
    uint64_t received = 0;
    ReceiveSlot* slot = nullptr;  // once a receive took it
    int buffer = -1;
    std::map<uint64_t, std::vector<uint8_t>> held;  // by offset, until a receive takes it
  };
  void onData(const udp_wire::Header& h, const uint8_t* datagram, size_t size, uint8_t tos, Picoseconds arrived);
  /// Whether `seq` is new; records it.
  bool record(uint64_t seq);
  /// Gives messages, in order, to the posted buffers.
  void assign();
  void completeIfWhole(uint64_t number);
  /// `held`: how long the packet it answers waited here (0 for a window update or probe reply).
  void sendAck(const udp_wire::Header& h, uint8_t flags, Picoseconds held);
  /// Acknowledges `h`, which arrived at `arrived`, with the batch's acknowledgement (sent at endOfBatch).
  void acknowledgeLater(const udp_wire::Header& h, uint8_t flags, Picoseconds arrived);
  void fail(Status s);

  UdpReceiverSetup setup_;
  UdpPaths paths_;
  DatagramOut& out_;
  std::function<void()> notify_;
  congestion::CnpGenerator cnp_;

  uint64_t cumulative_ = 0;    // every sequence number below arrived
  std::deque<bool> above_;     // above_[i]: cumulative_ + i arrived
  std::map<uint64_t, Incoming> incoming_;  // by message number: those not yet whole in a posted buffer
  uint64_t next_assign_ = 0;   // the first message no receive has taken
  std::deque<ReceiveSlot*> positions_;  // a posted buffer each, in posting order, not yet given a message
  uint64_t held_bytes_ = 0;
  bool window_update_due_ = false;
  bool ack_due_ = false;
  Picoseconds ack_for_arrived_ = 0;  // when the packet the batch's acknowledgement answers arrived
  udp_wire::Header ack_for_{};  // the batch's last data packet
  uint8_t ack_flags_ = 0;
  uint64_t duplicates_ = 0, malformed_ = 0, acks_sent_ = 0;
  Status error_;
};

}  // namespace megascale::transport
