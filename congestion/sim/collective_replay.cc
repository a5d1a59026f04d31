#include "congestion/sim/collective_replay.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace megascale::congestion::sim {

CollectiveReplay::CollectiveReplay(Network& net, const std::vector<std::vector<int>>& groups, const ScheduleSpec& spec,
                                   size_t dtype_size, ControlFactory control)
    : net_(net), spec_(spec), dtype_size_(dtype_size), control_(std::move(control)) {
  if (groups.empty() || groups.front().empty()) throw std::invalid_argument("collective replay: no ranks");
  spec_.nranks = static_cast<int>(groups.front().size());
  for (const std::vector<int>& group : groups) {
    const int n = static_cast<int>(group.size());
    std::vector<CompactSchedule>& compact = schedules_[n];
    if (compact.empty()) {
      compact.resize(static_cast<size_t>(n));
      for (int r = 0; r < n; ++r) {
        ScheduleSpec mine = spec;
        mine.nranks = n;
        mine.rank = r;
        const Schedule full = buildSchedule(mine);
        CompactSchedule& c = compact[static_cast<size_t>(r)];
        for (const Phase& phase : full.phases) {
          c.phase_begin.push_back(static_cast<uint32_t>(c.ops.size()));
          for (const Step& step : phase.comm) {
            if (step.isHost()) continue;  // inside the server (NVLink, shared memory): off the simulated network
            const bool send = step.kind == Step::kSend;
            c.ops.push_back(Op{step.peer, send, send ? static_cast<uint64_t>(step.a.count) * dtype_size : 0});
          }
        }
        c.phase_begin.push_back(static_cast<uint32_t>(c.ops.size()));
      }
    }
    const int base = static_cast<int>(ranks_.size());
    for (int r = 0; r < n; ++r) {
      RankState s;
      s.schedule = &compact[static_cast<size_t>(r)];
      s.group_base = base;
      ranks_.push_back(std::move(s));
      hosts_.push_back(group[static_cast<size_t>(r)]);
    }
  }
}

uint32_t CollectiveReplay::connection(int from, int to) {
  const uint64_t key = static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to);
  const auto it = connections_.find(key);
  if (it != connections_.end()) return it->second;
  const uint32_t id = net_.addConnection(hosts_[static_cast<size_t>(from)], hosts_[static_cast<size_t>(to)], control_);
  if (flow_ranks_.size() <= id) flow_ranks_.resize(id + 1, {-1, -1});
  flow_ranks_[id] = {from, to};
  connections_.emplace(key, id);
  return id;
}

bool CollectiveReplay::phaseComplete(int rank) const {
  const RankState& s = ranks_[static_cast<size_t>(rank)];
  if (s.sends_in_flight > 0) return false;
  for (const auto& [peer, count] : s.awaited) {
    if (delivered_.get(peer, rank) < count) return false;
  }
  return true;
}

void CollectiveReplay::enterPhase(int rank) {
  RankState& s = ranks_[static_cast<size_t>(rank)];
  s.awaited.clear();
  s.sends_in_flight = 0;
  if (s.phase >= s.schedule->phases()) {
    s.done = net_.events().now();
    --unfinished_;
    return;
  }
  const auto begin = s.schedule->ops.begin() + s.schedule->phase_begin[s.phase];
  const auto end = s.schedule->ops.begin() + s.schedule->phase_begin[s.phase + 1];
  // The j-th receive from a peer is that peer's j-th send to this rank.
  for (auto op = begin; op != end; ++op) {
    if (op->send) continue;
    const int peer = s.group_base + op->peer;
    posted_.increment(peer, rank);
    auto it = std::find_if(s.awaited.begin(), s.awaited.end(), [&](const auto& e) { return e.first == peer; });
    if (it == s.awaited.end()) s.awaited.push_back({peer, 0});
  }
  for (auto& [peer, count] : s.awaited) count = posted_.get(peer, rank);
  std::vector<int> woken;
  for (auto op = begin; op != end; ++op) {
    if (!op->send) continue;
    const int peer = s.group_base + op->peer;
    if (op->bytes == 0) {  // an empty message arrives at once
      delivered_.increment(rank, peer);
      woken.push_back(peer);
      continue;
    }
    ++s.sends_in_flight;
    ++messages_;
    net_.send(connection(rank, peer), op->bytes);
  }
  for (int peer : woken) advance(peer);
}

void CollectiveReplay::advance(int rank) {
  RankState& s = ranks_[static_cast<size_t>(rank)];
  while (s.done == kNever && phaseComplete(rank)) {
    ++s.phase;
    enterPhase(rank);
  }
}

void CollectiveReplay::messageDone(uint32_t id) {
  if (id >= flow_ranks_.size() || flow_ranks_[id].first < 0) return;  // not one of ours
  const auto [from, to] = flow_ranks_[id];
  --ranks_[static_cast<size_t>(from)].sends_in_flight;
  delivered_.increment(from, to);
  advance(from);
  advance(to);
}

void collectiveBandwidth(const ScheduleSpec& spec, size_t dtype_size, double seconds, double* algbw_gbs,
                         double* busbw_gbs) {
  // nccl-tests' algbw bytes and busbw factor for each collective.
  const double n = spec.nranks, bytes = static_cast<double>(spec.count * dtype_size);
  double size = bytes, factor = 1;
  switch (spec.collective) {
    case Collective::kAllReduce: factor = 2 * (n - 1) / n; break;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      size = bytes * n;
      factor = (n - 1) / n;
      break;
    default: break;
  }
  *algbw_gbs = seconds > 0 ? size / seconds / 1e9 : 0;
  *busbw_gbs = *algbw_gbs * factor;
}

CollectiveResult CollectiveReplay::run(Picoseconds end) {
  const Picoseconds start = net_.events().now();
  net_.on_message_done = [this](uint32_t id) { messageDone(id); };
  unfinished_ = static_cast<int>(ranks_.size());
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) enterPhase(r);
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) advance(r);
  net_.run(end);
  net_.on_message_done = nullptr;
  CollectiveResult result;
  result.finished = unfinished_ == 0;
  result.messages = messages_;
  Picoseconds last = start;
  for (const RankState& s : ranks_) last = std::max(last, s.done == kNever ? net_.events().now() : s.done);
  result.time = last - start;
  collectiveBandwidth(spec_, dtype_size_, static_cast<double>(result.time) / 1e12, &result.algbw_gbs,
                      &result.busbw_gbs);
  return result;
}

}  // namespace megascale::congestion::sim
