#include "collectives/peer_links.h"

#include "common/backoff.h"

namespace megascale {

PeerLinks::PeerLinks(std::unique_ptr<transport::Transport> transport, std::unique_ptr<transport::Listener> listener,
                     int rank, AddressLookup lookup)
    : transport_(std::move(transport)), listener_(std::move(listener)), rank_(rank), lookup_(std::move(lookup)) {}

Status PeerLinks::pollIncoming() {
  if (!listener_) return Status(ErrorCode::kAborted, "connections were closed after an earlier error");
  while (true) {
    std::unique_ptr<transport::RecvComm> comm;
    MSC_RETURN_IF_ERROR(listener_->accept(&comm));
    if (!comm) return Status::ok();
    int peer = static_cast<int>(comm->remoteId());
    recv_[peer] = std::move(comm);  // a reconnect replaces a stale comm
  }
}

void PeerLinks::closeAll() {
  send_.clear();
  recv_.clear();
  listener_.reset();
}

Status PeerLinks::sendComm(int peer, Deadline deadline, transport::SendComm** comm) {
  auto it = send_.find(peer);
  if (it != send_.end()) {
    *comm = it->second.get();
    return Status::ok();
  }
  if (!listener_) return Status(ErrorCode::kAborted, "connections were closed after an earlier error");
  std::unique_ptr<transport::Connector> connector;
  try {
    connector = transport_->connect(lookup_(peer), static_cast<uint64_t>(rank_));
  } catch (const Error& e) {
    return Status(e.code(), std::string("connecting to rank ") + std::to_string(peer) + ": " + e.what());
  }
  std::unique_ptr<transport::SendComm> made;
  IdleBackoff backoff;
  while (!made) {
    Status s = connector->poll(&made);
    if (!s.isOk()) return Status(s.code(), "connecting to rank " + std::to_string(peer) + ": " + s.message());
    MSC_RETURN_IF_ERROR(pollIncoming());  // the peer may be connecting to us at the same time
    if (made) break;
    if (aborted_ != nullptr && aborted_->load()) return Status(ErrorCode::kAborted, "aborted by the user");
    if (Clock::now() > deadline) {
      return Status(ErrorCode::kTimeout, "connecting to rank " + std::to_string(peer) +
                                             ": timed out (is it alive and in the same job?)");
    }
    backoff.idle();
  }
  *comm = made.get();
  send_[peer] = std::move(made);
  return Status::ok();
}

Status PeerLinks::recvComm(int peer, Deadline deadline, transport::RecvComm** comm) {
  IdleBackoff backoff;
  while (true) {
    auto it = recv_.find(peer);
    if (it != recv_.end()) {
      *comm = it->second.get();
      return Status::ok();
    }
    MSC_RETURN_IF_ERROR(pollIncoming());
    if (recv_.count(peer)) continue;
    if (aborted_ != nullptr && aborted_->load()) return Status(ErrorCode::kAborted, "aborted by the user");
    if (Clock::now() > deadline) {
      return Status(ErrorCode::kTimeout, "waiting for rank " + std::to_string(peer) +
                                             " to connect: timed out (is it alive and in the same job?)");
    }
    backoff.idle();
  }
}

}  // namespace megascale
