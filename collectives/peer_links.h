// The connections of one communicator, made lazily: a rank connects only to the peers its schedules name,
// looking each peer's listener addresses up once (from the store, or through the parent communicator). A rank
// listens on every transport it offers, once: its communicators share the listeners (ListenerHub) and tell
// their connections apart by group id. Per peer it connects with the first of its transports (best first)
// that can reach one of the peer's addresses: shared memory to a rank on this host, the network across hosts.
// Ownership: used only by the communicator's worker thread, except transportTo() (any thread).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/listener_hub.h"
#include "common/socket.h"
#include "transport/address_list.h"
#include "transport/transport.h"

namespace megascale {

class PeerLinks {
 public:
  using Endpoint = ListenerHub::Endpoint;
  /// Returns the peer's host and listener addresses, best first; may wait (store get). Throws Error naming
  /// the peer.
  using AddressLookup = std::function<transport::ListenerAddresses(int peer)>;
  /// Reads many peers' addresses in one go, ahead of connecting to them; may be empty.
  using AddressPrefetch = std::function<void(const std::vector<int>& peers)>;

  /// A communicator of its own listeners: endpoints best first, as transport::communicatorTransports orders them.
  PeerLinks(std::vector<Endpoint> endpoints, int rank, AddressLookup lookup);
  /// A group over a shared hub: `group` tells its connections apart; `transports` (best first) connect out.
  PeerLinks(std::shared_ptr<ListenerHub> hub, uint32_t group, std::vector<std::shared_ptr<transport::Transport>> transports,
            int rank, AddressLookup lookup);
  ~PeerLinks();

  const std::shared_ptr<ListenerHub>& hub() const { return hub_; }
  void setPrefetch(AddressPrefetch prefetch) { prefetch_ = std::move(prefetch); }
  /// How this rank finds its peers (set before the communicator runs anything, then unchanged: any thread may
  /// read them, as a split does to derive its child's).
  const AddressLookup& lookup() const { return lookup_; }
  const AddressPrefetch& prefetcher() const { return prefetch_; }
  /// Looks up, in one go, the addresses of those of `peers` this rank has no connection to yet. Errors are
  /// left to the connection that needs the address.
  void prefetch(const std::vector<int>& peers);
  uint32_t group() const { return group_; }
  const std::vector<std::shared_ptr<transport::Transport>>& transports() const { return transports_; }

  /// Connect and accept loops give up with kAborted once *aborted is set.
  void setAbortFlag(const std::atomic<bool>* aborted) { aborted_ = aborted; }

  /// The comm to send to / receive from `peer` without waiting: the one made already, or null while the
  /// connection is under way (the first call starts connecting; later calls move it on). A receive's comm
  /// arrives through pollIncoming(). Errors name the peer.
  Status trySendComm(int peer, transport::SendComm** comm);
  Status tryRecvComm(int peer, transport::RecvComm** comm);
  /// The descriptors the connections under way wait on; false if one offers none (its waiter naps instead).
  bool appendConnectingReadiness(std::vector<pollfd>& fds) const;
  /// The error for a connection to (`send`) or from `peer` not made within `timeout`.
  Status connectTimeout(int peer, bool send, std::chrono::milliseconds timeout) const;

  /// The comm to `peer` / from `peer` if it is already connected; null otherwise (never waits).
  transport::SendComm* connectedSendComm(int peer) const;
  transport::RecvComm* connectedRecvComm(int peer) const;

  /// The transport this rank sends to `peer` with; "" before the first send to it.
  std::string transportTo(int peer) const;
  /// "rank 3 on host node07" once this rank has connected to or accepted from rank 3; "rank 3" before. For
  /// error messages.
  std::string describePeer(int peer) const;
  /// How many connected peers each transport serves: "shm 1 tcp 2"; "" before any connection.
  std::string peersByTransport() const;

  /// Closes every connection, so peers blocked on this rank see an error at once instead of a timeout.
  void closeAll();

  /// Moves incoming handshakes forward; call from wait loops so peers connecting to us never stall.
  Status pollIncoming();
  /// The descriptors whose readiness lets pollIncoming() move; false if some listener offers none.
  bool appendIncomingReadiness(std::vector<pollfd>& fds) const { return !closed_ && hub_->appendReadiness(fds); }

 private:
  /// Starts connecting to peer with the first transport that reaches one of its addresses.
  Status startConnect(int peer, std::unique_ptr<transport::Connector>* connector, std::string* transport_name);

  std::shared_ptr<ListenerHub> hub_;
  uint32_t group_ = 0;
  std::vector<std::shared_ptr<transport::Transport>> transports_;  // best first
  bool closed_ = false;
  int rank_;
  AddressLookup lookup_;
  AddressPrefetch prefetch_;
  const std::atomic<bool>* aborted_ = nullptr;
  struct Connecting {
    std::unique_ptr<transport::Connector> connector;
    std::string transport;
  };
  std::map<int, Connecting> connecting_;  // sends under way, by peer
  std::map<int, std::unique_ptr<transport::SendComm>> send_;
  std::map<int, std::unique_ptr<transport::RecvComm>> recv_;
  std::map<int, std::string> hosts_;  // peers' host names, learnt from their addresses
  mutable std::mutex chosen_mutex_;  // guards chosen_ only
  std::map<int, std::string> chosen_;
};

}  // namespace megascale
