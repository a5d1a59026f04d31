// A rank's listeners, one per transport, shared by its communicator and every group made from it, so a group
// costs no listening socket, no port and no exchange of addresses. A connection's 64-bit id carries the group
// (high half) and the connecting rank's place in it (low half); the hub hands each accepted comm to its group,
// and keeps it for a group this rank has not made yet (there is no barrier: a peer may be ahead).
// Thread-safe: the workers of a rank's communicators share it.
#pragma once

#include <poll.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>
#include <vector>

#include "transport/transport.h"

namespace megascale {

class ListenerHub {
 public:
  /// One transport and its listener.
  struct Endpoint {
    std::shared_ptr<transport::Transport> transport;
    std::unique_ptr<transport::Listener> listener;
  };
  using Arrivals = std::map<int, std::unique_ptr<transport::RecvComm>>;  // by rank in the group

  /// endpoints: best first, as transport::communicatorTransports orders them.
  explicit ListenerHub(std::vector<Endpoint> endpoints);

  static uint64_t connectionId(uint32_t group, int rank) { return uint64_t{group} << 32 | static_cast<uint32_t>(rank); }

  const std::vector<Endpoint>& endpoints() const { return endpoints_; }

  /// Accepts what has arrived on every listener and moves the comms of `group` into *arrived (a later comm
  /// from the same rank replaces an earlier one: a reconnect).
  Status collect(uint32_t group, Arrivals* arrived);
  /// The descriptors whose readiness lets collect() move; false if a listener offers none.
  bool appendReadiness(std::vector<pollfd>& fds) const;
  /// Accepts what has arrived and moves handshakes on, keeping the comms for their groups' next collect().
  Status progress();
  /// True for one caller at a time: the communicator that answers peers while the rank is idle.
  bool claimWatch() { return !watched_.exchange(true); }
  void releaseWatch() { watched_.store(false); }
  /// The group is gone or failed: drops what waits for it, and closes its later arrivals at once, so peers
  /// connecting to it see an error instead of a timeout.
  void closeGroup(uint32_t group);

 private:
  Status acceptAll();  // mutex_ held

  mutable std::mutex mutex_;
  std::vector<Endpoint> endpoints_;
  std::unordered_map<uint32_t, Arrivals> waiting_;
  std::set<uint32_t> closed_;
  std::atomic<bool> watched_{false};
};

}  // namespace megascale
