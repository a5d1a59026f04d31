#include "collectives/peer_links.h"

#include <algorithm>

#include "common/backoff.h"

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

bool PeerLinks::waitForProgress(IdleBackoff& backoff, const transport::Connector* connector) {
  // Sleep until our connection or the listeners move: a handshake step waits for the peer's thread, which
  // spinning cannot hurry, and every spin round costs an accept and a receive that find nothing (on 2 cores,
  // thousands of ranks connecting at once spent more in those than in the handshakes). Without descriptors to
  // sleep on, the backoff naps.
  std::vector<pollfd> fds;
  const bool complete = connector == nullptr || connector->appendReadiness(fds);
  const size_t own = fds.size();
  if (complete && appendIncomingReadiness(fds) && !fds.empty()) {
    // The cap only bounds how late a deadline or abort is seen. When it passes, look at the listeners anyway: a
    // connection another group's thread accepted for this one waits in the hub, not on a descriptor.
    const int ready = ::poll(fds.data(), fds.size(), 100);
    backoff.rested();
    return ready <= 0 || std::any_of(fds.begin() + static_cast<std::ptrdiff_t>(own), fds.end(), [](const pollfd& p) { return p.revents != 0; });
  }
  backoff.idle();
  return true;
}

Status PeerLinks::sendComm(int peer, Deadline deadline, transport::SendComm** comm) {
  auto it = send_.find(peer);
  if (it != send_.end()) {
    *comm = it->second.get();
    return Status::ok();
  }
  if (closed_) return Status(ErrorCode::kAborted, "connections were closed after an earlier error");
  std::unique_ptr<transport::Connector> connector;
  std::string name;
  Status started = startConnect(peer, &connector, &name);
  if (!started.isOk()) {
    return Status(started.code(), "connecting to rank " + std::to_string(peer) + ": " + started.message());
  }
  std::unique_ptr<transport::SendComm> made;
  IdleBackoff backoff;
  bool incoming = true;  // a listener may have moved: accept only then (an accept that finds nothing costs a call)
  while (!made) {
    Status s = connector->poll(&made);
    if (!s.isOk()) return Status(s.code(), "connecting to rank " + std::to_string(peer) + " over " + name + ": " + s.message());
    if (incoming) MSC_RETURN_IF_ERROR(pollIncoming());  // the peer may be connecting to us at the same time
    if (made) break;
    if (aborted_ != nullptr && aborted_->load()) return Status(ErrorCode::kAborted, "aborted by the user");
    if (Clock::now() > deadline) {
      return Status(ErrorCode::kTimeout, "connecting to rank " + std::to_string(peer) + " over " + name +
                                             ": timed out (is it alive and in the same job?)");
    }
    incoming = waitForProgress(backoff, connector.get());
  }
  *comm = made.get();
  send_[peer] = std::move(made);
  std::lock_guard<std::mutex> lock(chosen_mutex_);
  chosen_[peer] = name;
  return Status::ok();
}

Status PeerLinks::recvComm(int peer, Deadline deadline, transport::RecvComm** comm) {
  IdleBackoff backoff;
  bool incoming = true;
  while (true) {
    auto it = recv_.find(peer);
    if (it != recv_.end()) {
      if (!hosts_.count(peer)) {  // the peer is up and published: its host name is there to read
        try {
          hosts_[peer] = lookup_(peer).host;
        } catch (const Error&) {
          hosts_[peer] = "";
        }
      }
      *comm = it->second.get();
      return Status::ok();
    }
    if (incoming) MSC_RETURN_IF_ERROR(pollIncoming());
    if (recv_.count(peer)) continue;
    if (aborted_ != nullptr && aborted_->load()) return Status(ErrorCode::kAborted, "aborted by the user");
    if (Clock::now() > deadline) {
      return Status(ErrorCode::kTimeout, "waiting for rank " + std::to_string(peer) +
                                             " to connect: timed out (is it alive and in the same job?)");
    }
    incoming = waitForProgress(backoff, nullptr);
  }
}

}  // namespace megascale
