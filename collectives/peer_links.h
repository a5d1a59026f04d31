// The connections of one communicator, made lazily: a rank connects only to the peers its schedules name,
// looking each address up once (from the store, or from a table a parent communicator handed over).
// Ownership: used only by the communicator's worker thread.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/socket.h"
#include "transport/transport.h"

namespace megascale {

class PeerLinks {
 public:
  /// Returns peer's listener address; may wait (store get). Throws Error naming the peer.
  using AddressLookup = std::function<transport::Address(int peer)>;

  PeerLinks(std::unique_ptr<transport::Transport> transport, std::unique_ptr<transport::Listener> listener, int rank,
            AddressLookup lookup);

  /// Connect and accept loops give up with kAborted once *aborted is set.
  void setAbortFlag(const std::atomic<bool>* aborted) { aborted_ = aborted; }

  const transport::Properties& properties() const { return transport_->properties(); }

  /// The comm to send to / receive from peer, connecting or accepting as needed until the deadline.
  Status sendComm(int peer, Deadline deadline, transport::SendComm** comm);
  Status recvComm(int peer, Deadline deadline, transport::RecvComm** comm);

  /// Closes every connection, so peers blocked on this rank see an error at once instead of a timeout.
  void closeAll();

  /// Moves incoming handshakes forward; call from wait loops so peers connecting to us never stall.
  Status pollIncoming();

 private:
  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<transport::Listener> listener_;
  int rank_;
  AddressLookup lookup_;
  const std::atomic<bool>* aborted_ = nullptr;
  std::map<int, std::unique_ptr<transport::SendComm>> send_;
  std::map<int, std::unique_ptr<transport::RecvComm>> recv_;
};

}  // namespace megascale
