#include "collectives/peer_links.h"

#include <algorithm>

namespace megascale {

namespace {
std::vector<std::shared_ptr<transport::Transport>> transportsOf(const std::vector<PeerLinks::Endpoint>& endpoints) {
  std::vector<std::shared_ptr<transport::Transport>> transports;
  for (const PeerLinks::Endpoint& e : endpoints) transports.push_back(e.transport);
  return transports;
}
}  // namespace

PeerLinks::PeerLinks(std::vector<Endpoint> endpoints, int rank, AddressLookup lookup)
    : transports_(transportsOf(endpoints)), rank_(rank), lookup_(std::move(lookup)) {
  hub_ = std::make_shared<ListenerHub>(std::move(endpoints));
}

PeerLinks::PeerLinks(std::shared_ptr<ListenerHub> hub, uint32_t group,
                     std::vector<std::shared_ptr<transport::Transport>> transports, int rank, AddressLookup lookup)
    : hub_(std::move(hub)), group_(group), transports_(std::move(transports)), rank_(rank), lookup_(std::move(lookup)) {}

PeerLinks::~PeerLinks() {
  if (group_ != 0) hub_->closeGroup(group_);  // a group's late arrivals are refused, not kept
}

void PeerLinks::prefetch(const std::vector<int>& peers) {
  if (!prefetch_) return;
  std::vector<int> unknown;
  for (int p : peers) {
    if (p != rank_ && !hosts_.count(p) && !send_.count(p)) unknown.push_back(p);
  }
  if (unknown.empty()) return;
  try {
    prefetch_(unknown);
  } catch (const Error&) {  // the connection that needs the address reports it, naming the peer
  }
}

Status PeerLinks::pollIncoming() {
  if (closed_) return Status(ErrorCode::kAborted, "connections were closed after an earlier error");
  ListenerHub::Arrivals arrived;
  MSC_RETURN_IF_ERROR(hub_->collect(group_, &arrived));
  for (auto& [peer, comm] : arrived) recv_[peer] = std::move(comm);  // a reconnect replaces a stale comm
  return Status::ok();
}

void PeerLinks::closeAll() {
  connecting_.clear();
  send_.clear();
  recv_.clear();
  hub_->closeGroup(group_);
  closed_ = true;
}

std::string PeerLinks::transportTo(int peer) const {
  std::lock_guard<std::mutex> lock(chosen_mutex_);
  auto it = chosen_.find(peer);
  return it == chosen_.end() ? "" : it->second;
}

transport::SendComm* PeerLinks::connectedSendComm(int peer) const {
  auto it = send_.find(peer);
  return it == send_.end() ? nullptr : it->second.get();
}

transport::RecvComm* PeerLinks::connectedRecvComm(int peer) const {
  auto it = recv_.find(peer);
  return it == recv_.end() ? nullptr : it->second.get();
}

std::string PeerLinks::describePeer(int peer) const {
  auto it = hosts_.find(peer);
  const std::string rank = "rank " + std::to_string(peer);
  return it == hosts_.end() || it->second.empty() ? rank : rank + " on host " + it->second;
}

std::string PeerLinks::peersByTransport() const {
  std::lock_guard<std::mutex> lock(chosen_mutex_);
  std::string text;
  for (const auto& t : transports_) {
    const std::string& name = t->properties().name;
    const auto peers = std::count_if(chosen_.begin(), chosen_.end(), [&](const auto& c) { return c.second == name; });
    if (peers > 0) text += (text.empty() ? "" : " ") + name + " " + std::to_string(peers);
  }
  return text;
}

Status PeerLinks::startConnect(int peer, std::unique_ptr<transport::Connector>* connector, std::string* transport_name) {
  try {
    const transport::ListenerAddresses listeners = lookup_(peer);
    hosts_[peer] = listeners.host;
    const std::vector<transport::Address>& addresses = listeners.addresses;
    for (const auto& t : transports_) {
      for (const transport::Address& address : addresses) {
        if (!t->canConnect(address)) continue;
        *connector = t->connect(address, ListenerHub::connectionId(group_, rank_));
        *transport_name = t->properties().name;
        return Status::ok();
      }
    }
    std::string mine, theirs;
    for (const auto& t : transports_) mine += (mine.empty() ? "" : ", ") + t->properties().name;
    for (const transport::Address& a : addresses) {
      const std::string text = a.asString();
      theirs += (theirs.empty() ? "" : ", ") + text.substr(0, text.find(':'));
    }
    return Status(ErrorCode::kInvalidArgument, "no transport of this rank (" + mine + ") reaches rank " +
                                                   std::to_string(peer) + " (it listens on " + theirs +
                                                   "); a same-host transport cannot reach another host: use MEGASCALE_TRANSPORT=auto");
  } catch (const Error& e) {
    return Status(e.code(), e.what());
  }
}

Status PeerLinks::trySendComm(int peer, transport::SendComm** comm) {
  *comm = connectedSendComm(peer);
  if (*comm != nullptr) return Status::ok();
  if (closed_) return Status(ErrorCode::kAborted, "connections were closed after an earlier error");
  auto it = connecting_.find(peer);
  if (it == connecting_.end()) {
    Connecting fresh;
    Status started = startConnect(peer, &fresh.connector, &fresh.transport);
    if (!started.isOk()) {
      return Status(started.code(), "connecting to rank " + std::to_string(peer) + ": " + started.message());
    }
    it = connecting_.emplace(peer, std::move(fresh)).first;
  }
  std::unique_ptr<transport::SendComm> made;
  Status s = it->second.connector->poll(&made);
  const std::string name = it->second.transport;
  if (!s.isOk()) {
    connecting_.erase(it);
    return Status(s.code(), "connecting to rank " + std::to_string(peer) + " over " + name + ": " + s.message());
  }
  if (!made) return Status::ok();
  connecting_.erase(it);
  *comm = made.get();
  send_[peer] = std::move(made);
  std::lock_guard<std::mutex> lock(chosen_mutex_);
  chosen_[peer] = name;
  return Status::ok();
}

Status PeerLinks::tryRecvComm(int peer, transport::RecvComm** comm) {
  *comm = connectedRecvComm(peer);
  if (*comm == nullptr) {
    return closed_ ? Status(ErrorCode::kAborted, "connections were closed after an earlier error") : Status::ok();
  }
  if (!hosts_.count(peer)) {  // the peer is up and published: its host name is there to read
    try {
      hosts_[peer] = lookup_(peer).host;
    } catch (const Error&) {
      hosts_[peer] = "";
    }
  }
  return Status::ok();
}

bool PeerLinks::appendConnectingReadiness(std::vector<pollfd>& fds) const {
  for (const auto& [peer, c] : connecting_) {
    if (!c.connector->appendReadiness(fds)) return false;
  }
  return true;
}

Status PeerLinks::connectTimeout(int peer, bool send, std::chrono::milliseconds timeout) const {
  const std::string waited = " for " + std::to_string(timeout.count()) + " ms (is it alive and in the same job?)";
  if (!send) return Status(ErrorCode::kTimeout, "waiting for rank " + std::to_string(peer) + " to connect: timed out" + waited);
  auto it = connecting_.find(peer);
  const std::string over = it == connecting_.end() ? "" : " over " + it->second.transport;
  return Status(ErrorCode::kTimeout, "connecting to rank " + std::to_string(peer) + over + ": timed out" + waited);
}

}  // namespace megascale
