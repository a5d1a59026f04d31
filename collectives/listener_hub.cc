#include "collectives/listener_hub.h"

namespace megascale {

ListenerHub::ListenerHub(std::vector<Endpoint> endpoints) : endpoints_(std::move(endpoints)) {}

Status ListenerHub::acceptAll() {
  for (Endpoint& e : endpoints_) {
    if (!e.listener) continue;
    std::vector<std::unique_ptr<transport::RecvComm>> ready;
    MSC_RETURN_IF_ERROR(e.listener->acceptReady(&ready));
    for (std::unique_ptr<transport::RecvComm>& comm : ready) {
      const uint64_t id = comm->remoteId();
      const uint32_t group = static_cast<uint32_t>(id >> 32);
      if (closed_.count(group)) continue;  // dropping it closes the connection
      waiting_[group][static_cast<int>(static_cast<uint32_t>(id))] = std::move(comm);
    }
  }
  return Status::ok();
}

Status ListenerHub::progress() {
  std::lock_guard<std::mutex> lock(mutex_);
  return acceptAll();
}

Status ListenerHub::collect(uint32_t group, Arrivals* arrived) {
  std::lock_guard<std::mutex> lock(mutex_);
  MSC_RETURN_IF_ERROR(acceptAll());
  auto it = waiting_.find(group);
  if (it == waiting_.end()) return Status::ok();
  for (auto& [rank, comm] : it->second) (*arrived)[rank] = std::move(comm);
  waiting_.erase(it);
  return Status::ok();
}

bool ListenerHub::appendReadiness(std::vector<pollfd>& fds) const {
  std::lock_guard<std::mutex> lock(mutex_);
  bool all = true;
  for (const Endpoint& e : endpoints_) {
    if (e.listener) all = e.listener->appendReadiness(fds) && all;
  }
  return all;
}

void ListenerHub::closeGroup(uint32_t group) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_.insert(group);
  waiting_.erase(group);
}

}  // namespace megascale
