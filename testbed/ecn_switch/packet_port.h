// A switch port: a packet socket (AF_PACKET) bound to the root-namespace end of a host's cable, receiving every
// frame the host sends and handing frames to it. The switch's own sends are not read back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "testbed/ecn_switch/egress_queue.h"

namespace megascale::testbed {

struct ReceivedFrame {
  Frame frame;
  /// When the kernel took it off the cable (CLOCK_MONOTONIC): a switch process that reads frames late must not
  /// lose the wire time in between, as no hardware switch would.
  int64_t arrived_ns;
};

class PacketPort {
 public:
  /// Opens and binds the socket; throws std::runtime_error naming the interface and errno.
  explicit PacketPort(std::string interface);
  ~PacketPort();
  PacketPort(const PacketPort&) = delete;
  PacketPort& operator=(const PacketPort&) = delete;

  const std::string& name() const { return name_; }
  int fd() const { return fd_; }
  /// Frames waiting in the socket, up to `max` (never blocks), each with its arrival (`now_ns` where the kernel
  /// gave none). Throws when the interface has gone (the test bed was torn down).
  std::vector<ReceivedFrame> receive(int max, int64_t now_ns);
  /// Hands a frame to the host; false when the interface refused it (its cable is down): the frame is lost.
  bool send(const Frame& frame);
  /// Frames the kernel dropped because this socket's buffer was full (the switch fell behind).
  uint64_t socketDrops();

 private:
  std::string name_;
  int fd_ = -1;
  uint64_t socket_drops_ = 0;
  Frame buffer_;  // where each frame lands before it is copied out at its own size
};

}  // namespace megascale::testbed
