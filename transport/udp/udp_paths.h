// A udp connection's paths and which of them the packets are sprayed over. Path i runs from local flow i mod the
// local flows to the peer's flow i mod its flows, so both ends number the paths alike (an acknowledgement goes
// back on the path of the packet it answers). A path that stops delivering while the others deliver - a flow
// hashed onto a broken link, a rail whose cable was pulled - leaves the spray once it has gone `down_after`
// unanswered since a packet left on it, and is probed back in (a probe every `down_after` x 5, at least 100 ms)
// once it answers.
#pragma once

#include <netinet/in.h>

#include <string>
#include <vector>

#include "common/picoseconds.h"
#include "transport/udp/udp_socket.h"

namespace megascale::transport {

class UdpPaths {
 public:
  UdpPaths(int local_flows, const std::vector<UdpEndpoint>& remote, Picoseconds down_after);
  int count() const { return static_cast<int>(paths_.size()); }
  int localFlow(int path) const { return paths_[static_cast<size_t>(path)].flow; }
  const sockaddr_in& remote(int path) const { return paths_[static_cast<size_t>(path)].to; }
  bool up(int path) const { return paths_[static_cast<size_t>(path)].up; }
  int upCount() const;
  Picoseconds downAfter() const { return down_after_; }

  /// The path for the next packet: round robin over those up (over every path when none is).
  int next();
  /// A packet left on `path`.
  void onSent(int path, Picoseconds now);
  /// A packet sent on `path` was acknowledged.
  void onDelivered(int path, Picoseconds now);
  /// Takes `path` down if nothing it carried has been answered for `down_after` since a packet left on it, while
  /// another path delivered meanwhile. True when it went down now.
  bool judge(int path, Picoseconds now);
  /// Down paths whose next probe is due; each counts as probed now.
  std::vector<int> probesDue(Picoseconds now);
  /// A probe on `path` was answered: it is up again. True when it was down.
  bool onProbeReply(int path, Picoseconds now);
  /// The earliest time a probe is due (kNever when every path is up).
  Picoseconds nextProbe() const;

 private:
  struct Path {
    int flow;
    sockaddr_in to;
    bool up = true;
    Picoseconds last_delivery = -1;
    Picoseconds unanswered_since = kNever;  // the first packet sent on it since its last delivery
    Picoseconds next_probe = kNever;
  };
  Picoseconds probeInterval() const;

  std::vector<Path> paths_;
  Picoseconds down_after_;
  int next_ = 0;
};

}  // namespace megascale::transport
