#include "transport/udp/udp_paths.h"

#include <algorithm>

namespace megascale::transport {

UdpPaths::UdpPaths(int local_flows, const std::vector<UdpEndpoint>& remote, Picoseconds down_after)
    : down_after_(down_after) {
  const int n = std::max(local_flows, static_cast<int>(remote.size()));
  for (int i = 0; i < n; ++i) {
    Path p;
    p.flow = i % local_flows;
    p.to = remote[static_cast<size_t>(i) % remote.size()].address();
    paths_.push_back(p);
  }
}

int UdpPaths::upCount() const {
  return static_cast<int>(std::count_if(paths_.begin(), paths_.end(), [](const Path& p) { return p.up; }));
}

int UdpPaths::next() {
  const bool any_up = upCount() > 0;
  for (int tries = 0; tries < count(); ++tries) {
    const int path = next_;
    next_ = (next_ + 1) % count();
    if (!any_up || paths_[static_cast<size_t>(path)].up) return path;
  }
  return 0;
}

void UdpPaths::onSent(int path, Picoseconds now) {
  Path& p = paths_[static_cast<size_t>(path)];
  if (p.unanswered_since == kNever) p.unanswered_since = now;
}

void UdpPaths::onDelivered(int path, Picoseconds now) {
  Path& p = paths_[static_cast<size_t>(path)];
  p.last_delivery = std::max(p.last_delivery, now);
  p.unanswered_since = kNever;
}

bool UdpPaths::judge(int path, Picoseconds now) {
  Path& p = paths_[static_cast<size_t>(path)];
  const Picoseconds since = p.unanswered_since;
  if (!p.up || since == kNever || now - since < down_after_) return false;
  bool others_deliver = false;
  for (const Path& q : paths_) others_deliver = others_deliver || (&q != &p && q.up && q.last_delivery > since);
  if (!others_deliver) return false;  // nothing delivers: a stall of the whole connection, not of this path
  p.up = false;
  p.next_probe = now + probeInterval();
  return true;
}

std::vector<int> UdpPaths::probesDue(Picoseconds now) {
  std::vector<int> due;
  for (size_t i = 0; i < paths_.size(); ++i) {
    Path& p = paths_[i];
    if (p.up || p.next_probe > now) continue;
    due.push_back(static_cast<int>(i));
    p.next_probe = now + probeInterval();
  }
  return due;
}

bool UdpPaths::onProbeReply(int path, Picoseconds now) {
  Path& p = paths_[static_cast<size_t>(path)];
  p.last_delivery = std::max(p.last_delivery, now);
  p.unanswered_since = kNever;
  if (p.up) return false;
  p.up = true;
  p.next_probe = kNever;
  return true;
}

Picoseconds UdpPaths::nextProbe() const {
  Picoseconds next = kNever;
  for (const Path& p : paths_) {
    if (!p.up) next = std::min(next, p.next_probe);
  }
  return next;
}

Picoseconds UdpPaths::probeInterval() const { return std::max(5 * down_after_, 100 * kMillisecond); }

}  // namespace megascale::transport
