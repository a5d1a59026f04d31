#include "sim/collective_replay.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "collectives/algorithms/registry.h"
#include "collectives/host_layout.h"

namespace megascale::sim {

namespace {

// A slice in the terms of the buffer it really lies in: NCCL's in-place layouts put the input inside the output
// (all-gather) or the output inside the input (reduce-scatter), or make them one buffer.
Slice placed(const ScheduleSpec& spec, Slice x) {
  if (!spec.in_place) return x;
  const size_t shift = spec.count * static_cast<size_t>(spec.rank);
  switch (spec.collective) {
    case Collective::kAllGather:
      if (x.buffer == kInput) x = Slice{kOutput, x.offset + shift, x.count};
      break;
    case Collective::kReduceScatter:
      if (x.buffer == kOutput) x = Slice{kInput, x.offset + shift, x.count};
      break;
    default:
      if (x.buffer == kInput) x.buffer = kOutput;
  }
  return x;
}

bool overlap(const Slice& x, const Slice& y) {
  return x.count > 0 && y.count > 0 && x.buffer == y.buffer && x.offset < y.offset + y.count && y.offset < x.offset + x.count;
}

bool conflict(const StepAccess& earlier, const StepAccess& later) { return stepsConflict(earlier, later, overlap); }

// The bytes a host step moves in or out of one rank's memory: (L-1)/L of the data it exchanges with the host's
// other L-1 ranks, twice for an all-reduce (a reduce-scatter and an all-gather), as NCCL's NVLink phases.
uint64_t hostStepBytes(const ScheduleSpec& spec, const Step& step, size_t dtype_size) {
  const auto& host = spec.hosts->ranks_of[static_cast<size_t>(spec.hosts->host_of[static_cast<size_t>(spec.rank)])];
  const double share = static_cast<double>(host.size() - 1) / static_cast<double>(host.size());
  const double bytes = static_cast<double>((step.kind == Step::kHostAllGather ? step.dst.count : step.a.count) * dtype_size);
  return static_cast<uint64_t>((step.kind == Step::kHostAllReduce ? 2 : 1) * share * bytes);
}

}  // namespace

// The executor's rules (collectives/executor.cc) on slices instead of addresses: a step depends on every earlier
// step in the window whose bytes it overlaps, except that the communication steps (transfers and host steps) of
// one phase never depend on each other. Local steps take no time, so a later step depends on the communication
// steps behind them.
CollectiveReplay::CompactSchedule CollectiveReplay::compact(const ScheduleSpec& spec, size_t dtype_size) {
  const Schedule full = buildSchedule(spec);
  struct Recent {
    StepAccess access;
    size_t phase;
    std::vector<uint32_t> ops;  // the communication steps this step's completion stands for
  };
  CompactSchedule c;
  std::deque<Recent> recent;
  std::unordered_map<int64_t, uint32_t> ordinals;  // (peer, send) -> transfers so far
  uint32_t host_steps = 0;
  std::vector<uint32_t> needs;
  const auto collect = [&](const StepAccess& access, size_t until) {
    needs.clear();
    for (size_t j = 0; j < until; ++j) {
      if (conflict(recent[j].access, access)) needs.insert(needs.end(), recent[j].ops.begin(), recent[j].ops.end());
    }
    std::sort(needs.begin(), needs.end());
    needs.erase(std::unique(needs.begin(), needs.end()), needs.end());
  };
  const auto placedAccess = [&](const Step& step) {
    StepAccess a = accessOf(step);
    for (Slice& r : a.reads) r = placed(spec, r);
    a.write = placed(spec, a.write);
    return a;
  };
  for (size_t p = 0; p < full.phases.size(); ++p) {
    // Steps of phases kDataFlowWindowPhases back are done before any step of this phase may start.
    while (!recent.empty() && recent.front().phase + kDataFlowWindowPhases <= p) recent.pop_front();
    const size_t before_phase = recent.size();
    c.phase_begin.push_back(static_cast<uint32_t>(c.ops.size()));
    const Phase& phase = full.phases[p];
    for (const auto* steps : {&phase.comm, &phase.local}) {
      for (const Step& step : *steps) {
        const StepAccess access = placedAccess(step);
        const bool transfer = step.kind == Step::kSend || step.kind == Step::kRecv;
        const bool communication = transfer || step.isHost();
        collect(access, communication ? before_phase : recent.size());
        if (!communication) {  // a local step: instantaneous, it passes its dependencies on
          recent.push_back(Recent{access, p, needs});
          continue;
        }
        Op op{};
        if (step.isHost()) {
          op = Op{-1, Op::kHost, host_steps++, hostStepBytes(spec, step, dtype_size), 0, 0};
        } else {
          const bool send = step.kind == Step::kSend;
          const int64_t key = static_cast<int64_t>(step.peer) * 2 + (send ? 1 : 0);
          op = Op{step.peer, send ? Op::kSend : Op::kRecv, ordinals[key]++,
                  send ? static_cast<uint64_t>(step.a.count) * dtype_size : 0, 0, 0};
        }
        op.deps_begin = static_cast<uint32_t>(c.deps.size());
        c.deps.insert(c.deps.end(), needs.begin(), needs.end());
        op.deps_end = static_cast<uint32_t>(c.deps.size());
        recent.push_back(Recent{access, p, {static_cast<uint32_t>(c.ops.size())}});
        c.ops.push_back(op);
      }
    }
  }
  c.phase_begin.push_back(static_cast<uint32_t>(c.ops.size()));
  return c;
}

CollectiveReplay::CollectiveReplay(Network& net, const std::vector<std::vector<int>>& groups, const ScheduleSpec& spec,
                                   size_t dtype_size, ControlFactory control)
    : net_(net), spec_(spec), dtype_size_(dtype_size), control_(std::move(control)) {
  if (groups.empty() || groups.front().empty()) throw std::invalid_argument("collective replay: no ranks");
  spec_.nranks = static_cast<int>(groups.front().size());
  for (const std::vector<int>& group : groups) {
    const int n = static_cast<int>(group.size());
    std::vector<CompactSchedule>& schedules = schedules_[n];
    if (schedules.empty()) {
      for (int r = 0; r < n; ++r) {
        ScheduleSpec mine = spec;
        mine.nranks = n;
        mine.rank = r;
        schedules.push_back(compact(mine, dtype_size));
      }
    }
    const int base = static_cast<int>(ranks_.size());
    for (int r = 0; r < n; ++r) {
      RankState s;
      s.schedule = &schedules[static_cast<size_t>(r)];
      s.group_base = base;
      s.ops.assign(s.schedule->ops.size(), kWaiting);
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

void CollectiveReplay::progress(int rank) {
  RankState& s = ranks_[static_cast<size_t>(rank)];
  if (s.done != kNever) return;
  const CompactSchedule& c = *s.schedule;
  const auto ready = [&](const Op& op) {
    for (uint32_t d = op.deps_begin; d < op.deps_end; ++d) {
      if (s.ops[c.deps[d]] != kDone) return false;
    }
    return true;
  };
  for (bool moved = true; moved;) {
    moved = false;
    const size_t window_end = std::min(c.phases(), s.oldest + kDataFlowWindowPhases);
    while (s.first_open < s.ops.size() && s.ops[s.first_open] == kDone) ++s.first_open;
    for (uint32_t i = s.first_open; i < c.phase_begin[window_end]; ++i) {
      if (s.ops[i] != kWaiting) continue;
      const Op& op = c.ops[i];
      if (!ready(op)) continue;  // before the pair counters: most ops in the window wait for data
      if (op.kind == Op::kHost) {
        // The host stage runs them one at a time, in program order.
        if (op.ordinal != s.host_steps_started || s.host_step_running) continue;
        ++s.host_steps_started;
        s.host_step_running = true;
        s.ops[i] = kInFlight;
        moved = true;
        joinHostStep(rank, i);
        continue;
      }
      const int peer = s.group_base + op.peer;
      if (op.kind == Op::kSend) {
        if (sent_.get(rank, peer) != op.ordinal) continue;  // connections keep program order
        sent_.increment(rank, peer);
        moved = true;
        if (op.bytes == 0) {  // an empty message arrives at once
          s.ops[i] = kDone;
          delivered_.increment(rank, peer);
          wake(peer);
          continue;
        }
        s.ops[i] = kInFlight;
        in_flight_[static_cast<uint64_t>(rank) << 32 | static_cast<uint32_t>(peer)].push_back(i);
        ++messages_;
        net_.send(connection(rank, peer), op.bytes);
      } else if (delivered_.get(peer, rank) > op.ordinal) {
        s.ops[i] = kDone;
        moved = true;
      }
    }
    while (s.oldest < c.phases()) {
      bool finished = true;
      for (uint32_t i = c.phase_begin[s.oldest]; i < c.phase_begin[s.oldest + 1] && finished; ++i) finished = s.ops[i] == kDone;
      if (!finished) break;
      ++s.oldest;
      moved = true;
    }
  }
  if (s.oldest >= c.phases()) {
    s.done = net_.events().now();
    --unfinished_;
  }
}

// The k-th host step of every rank of a host is one call of the host's engine: it starts when the last of them
// joins and takes its bytes at the host's rate.
void CollectiveReplay::joinHostStep(int rank, uint32_t op_index) {
  const RankState& s = ranks_[static_cast<size_t>(rank)];
  const int local_rank = rank - s.group_base;
  const int host = spec_.hosts->host_of[static_cast<size_t>(local_rank)];
  const Op& op = s.schedule->ops[op_index];
  const uint64_t key = (static_cast<uint64_t>(s.group_base + host) << 32) | op.ordinal;
  auto [it, fresh] = host_calls_.try_emplace(key);
  if (fresh) {
    it->second.index = static_cast<uint32_t>(host_call_members_.size());
    host_call_members_.emplace_back();
  }
  std::vector<std::pair<int, uint32_t>>& members = host_call_members_[it->second.index];
  members.emplace_back(rank, op_index);
  it->second.bytes = std::max(it->second.bytes, op.bytes);
  if (members.size() < spec_.hosts->ranks_of[static_cast<size_t>(host)].size()) return;
  const double seconds = host_bytes_per_s_ > 0 ? static_cast<double>(it->second.bytes) / host_bytes_per_s_ : 0;
  const uint32_t index = it->second.index;
  host_calls_.erase(it);
  net_.events().schedule(net_.events().now() + static_cast<Picoseconds>(seconds * 1e12), this, kHostStepDone, index);
}

void CollectiveReplay::onEvent(int kind, uint64_t arg) {
  if (kind != kHostStepDone) return;
  std::vector<std::pair<int, uint32_t>> members = std::move(host_call_members_[arg]);
  for (const auto& [rank, op_index] : members) {
    RankState& s = ranks_[static_cast<size_t>(rank)];
    s.ops[op_index] = kDone;
    s.host_step_running = false;
    wake(rank);
  }
  drain();
}

void CollectiveReplay::drain() {
  while (!woken_.empty()) {
    const int rank = woken_.back();
    woken_.pop_back();
    progress(rank);
  }
}

void CollectiveReplay::messageDone(uint32_t id) {
  if (id >= flow_ranks_.size() || flow_ranks_[id].first < 0) return;  // not one of ours
  const auto [from, to] = flow_ranks_[id];
  std::deque<uint32_t>& flying = in_flight_[static_cast<uint64_t>(from) << 32 | static_cast<uint32_t>(to)];
  if (!flying.empty()) {  // messages of one connection complete in order
    ranks_[static_cast<size_t>(from)].ops[flying.front()] = kDone;
    flying.pop_front();
  }
  delivered_.increment(from, to);
  wake(from);
  wake(to);
  drain();
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
  for (int r = 0; r < static_cast<int>(ranks_.size()); ++r) wake(r);
  drain();
  while (unfinished_ > 0 && net_.events().step(end)) {  // host steps' events too, not only the network's flows
  }
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

}  // namespace megascale::sim
