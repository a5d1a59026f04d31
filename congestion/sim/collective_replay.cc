#include "congestion/sim/collective_replay.h"

#include <algorithm>

namespace megascale::congestion::sim {

CollectiveReplay::CollectiveReplay(Network& net, std::vector<int> rank_hosts, const ScheduleSpec& spec,
                                   size_t dtype_size, ControlFactory control)
    : net_(net), hosts_(std::move(rank_hosts)), spec_(spec), dtype_size_(dtype_size), control_(std::move(control)) {
  const int n = static_cast<int>(hosts_.size());
  spec_.nranks = n;
  ranks_.resize(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    ScheduleSpec mine = spec_;
    mine.rank = r;
    ranks_[static_cast<size_t>(r)].schedule = buildSchedule(mine);
  }
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
  if (s.phase >= s.schedule.phases.size()) {
    s.done = net_.events().now();
    --unfinished_;
    return;
  }
  // The j-th receive from a peer is that peer's j-th send to this rank.
  for (const Step& step : s.schedule.phases[s.phase].comm) {
    if (step.kind != Step::kRecv) continue;
    posted_.increment(step.peer, rank);
    auto it = std::find_if(s.awaited.begin(), s.awaited.end(), [&](const auto& e) { return e.first == step.peer; });
    if (it == s.awaited.end()) s.awaited.push_back({step.peer, 0});
  }
  for (auto& [peer, count] : s.awaited) count = posted_.get(peer, rank);
  std::vector<int> woken;
  for (const Step& step : s.schedule.phases[s.phase].comm) {
    if (step.kind != Step::kSend) continue;
    const uint64_t bytes = static_cast<uint64_t>(step.a.count) * dtype_size_;
    if (bytes == 0) {  // an empty message arrives at once
      delivered_.increment(rank, step.peer);
      woken.push_back(step.peer);
      continue;
    }
    const uint32_t id = net_.addFlow(hosts_[static_cast<size_t>(rank)], hosts_[static_cast<size_t>(step.peer)], bytes,
                                     net_.events().now(), control_);
    if (flow_ranks_.size() <= id) flow_ranks_.resize(id + 1, {-1, -1});
    flow_ranks_[id] = {rank, step.peer};
    ++s.sends_in_flight;
    ++flows_;
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

void CollectiveReplay::flowDone(uint32_t id) {
  if (id >= flow_ranks_.size() || flow_ranks_[id].first < 0) return;  // not one of ours
  const auto [from, to] = flow_ranks_[id];
  --ranks_[static_cast<size_t>(from)].sends_in_flight;
  delivered_.increment(from, to);
  advance(from);
  advance(to);
}

namespace {

// nccl-tests' algbw bytes and busbw factor for each collective.
void bandwidth(const ScheduleSpec& spec, size_t dtype_size, double seconds, CollectiveResult* r) {
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
  r->algbw_gbs = seconds > 0 ? size / seconds / 1e9 : 0;
  r->busbw_gbs = r->algbw_gbs * factor;
}

}  // namespace

CollectiveResult CollectiveReplay::run(Picoseconds end) {
  const Picoseconds start = net_.events().now();
  net_.on_flow_done = [this](uint32_t id) { flowDone(id); };
  unfinished_ = static_cast<int>(ranks_.size());
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) enterPhase(r);
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) advance(r);
  net_.run(end);
  net_.on_flow_done = nullptr;
  CollectiveResult result;
  result.finished = unfinished_ == 0;
  result.flows = flows_;
  Picoseconds last = start;
  for (const RankState& s : ranks_) last = std::max(last, s.done == kNever ? net_.events().now() : s.done);
  result.time = last - start;
  bandwidth(spec_, dtype_size_, static_cast<double>(result.time) / 1e12, &result);
  return result;
}

}  // namespace megascale::congestion::sim
