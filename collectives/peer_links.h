// The connections of one communicator, made lazily: a rank connects only to the peers its schedules name,
// looking each peer's listener addresses up once (from the store, or from a table a parent communicator
// handed over). A rank listens on every transport it offers; per peer it connects with the first of its
// transports (best first) that can reach one of the peer's addresses: shared memory to a rank on this host,
// the network transport across hosts.
// Ownership: used only by the communicator's worker thread, except transportTo() (any thread).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/socket.h"
#include "transport/address_list.h"
#include "transport/transport.h"

namespace megascale {

class PeerLinks {
 public:
  /// One transport and its listener.
  struct Endpoint {
    std::unique_ptr<transport::Transport> transport;
    std::unique_ptr<transport::Listener> listener;
  };
  /// Returns the peer's host and listener addresses, best first; may wait (store get). Throws Error naming
  /// the peer.
  using AddressLookup = std::function<transport::ListenerAddresses(int peer)>;

  /// endpoints: best first, as transport::communicatorTransports orders them.
  PeerLinks(std::vector<Endpoint> endpoints, int rank, AddressLookup lookup);

  /// Connect and accept loops give up with kAborted once *aborted is set.
  void setAbortFlag(const std::atomic<bool>* aborted) { aborted_ = aborted; }

  /// The comm to send to / receive from peer, connecting or accepting as needed until the deadline.
  Status sendComm(int peer, Deadline deadline, transport::SendComm** comm);
  Status recvComm(int peer, Deadline deadline, transport::RecvComm** comm);

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

 private:
  /// Starts connecting to peer with the first transport that reaches one of its addresses.
  Status startConnect(int peer, std::unique_ptr<transport::Connector>* connector, std::string* transport_name);

  std::vector<Endpoint> endpoints_;
  bool closed_ = false;
  int rank_;
  AddressLookup lookup_;
  const std::atomic<bool>* aborted_ = nullptr;
  std::map<int, std::unique_ptr<transport::SendComm>> send_;
  std::map<int, std::unique_ptr<transport::RecvComm>> recv_;
  std::map<int, std::string> hosts_;  // peers' host names, learnt from their addresses
  mutable std::mutex chosen_mutex_;  // guards chosen_ only
  std::map<int, std::string> chosen_;
};

}  // namespace megascale
