#include "collectives/schedule_simulator.h"

#include <cstring>
#include <deque>
#include <map>

#include "collectives/algorithms/registry.h"
#include "collectives/dtype.h"
#include "collectives/host_layout.h"
#include "collectives/reduce_kernels.h"

namespace megascale::testing {

namespace {

struct Message {
  std::vector<uint8_t> bytes;
  std::vector<bool> heard;
};

struct RankState {
  Schedule schedule;
  size_t phase = 0;
  uint8_t* bases[kUser + 1] = {nullptr, nullptr, nullptr, nullptr};
  std::vector<uint8_t> scratch;
  std::vector<uint8_t> extra;  // the rewrite's buffer (kUser)
};

struct Range {
  const uint8_t* begin;
  const uint8_t* end;
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};

}  // namespace

SimulationResult simulate(const ScheduleSpec& base, mscDataType_t type, mscRedOp_t op, std::vector<RankBuffers>& buffers,
                          const ScheduleRewrite& rewrite) {
  const int n = base.nranks;
  const size_t es = dtypeSize(type);
  SimulationResult result;
  result.heard_from.assign(n, std::vector<bool>(n, false));
  for (int r = 0; r < n; ++r) result.heard_from[r][r] = true;
  auto fail = [&](int rank, size_t phase, const std::string& why) {
    if (result.ok) {
      result.ok = false;
      result.error = "rank " + std::to_string(rank) + " phase " + std::to_string(phase) + ": " + why;
    }
  };

  std::vector<RankState> ranks(n);
  for (int r = 0; r < n; ++r) {
    ScheduleSpec spec = base;
    spec.rank = r;
    ranks[r].schedule = buildSchedule(spec);
    if (rewrite) {
      size_t extra_count = 0;
      ranks[r].schedule = rewrite(ranks[r].schedule, &extra_count);
      ranks[r].extra.assign(extra_count * es, 0xEE);
    }
    ranks[r].scratch.assign(ranks[r].schedule.scratch_count * es, 0xCD);
    uint8_t* outp = buffers[r].output.data();
    uint8_t* inp = buffers[r].input.data();
    if (spec.in_place) {  // NCCL's in-place layouts
      size_t c = spec.count * es;
      if (spec.collective == Collective::kAllGather) inp = outp + c * r;
      else if (spec.collective == Collective::kReduceScatter) {
        inp = outp;
        outp = outp + c * r;
      } else inp = outp;
    }
    ranks[r].bases[kInput] = inp;
    ranks[r].bases[kOutput] = outp;
    ranks[r].bases[kScratch] = ranks[r].scratch.data();
    ranks[r].bases[kUser] = ranks[r].extra.data();
  }
  const size_t limits[2] = {inputCount(base), outputCount(base)};
  auto inBounds = [&](int r, const Slice& s) {
    size_t limit = s.buffer == kScratch ? ranks[r].schedule.scratch_count
                   : s.buffer == kUser  ? ranks[r].extra.size() / es
                   : s.buffer < kScratch ? limits[s.buffer]
                                         : 0;
    return s.buffer <= kUser && s.offset + s.count <= limit;
  };
  for (int r = 0; r < n; ++r) {
    for (size_t p = 0; p < ranks[r].schedule.phases.size(); ++p) {
      for (const auto* steps : {&ranks[r].schedule.phases[p].comm, &ranks[r].schedule.phases[p].local}) {
        for (const Step& s : *steps) {
          bool ok = s.kind == Step::kSend ? inBounds(r, s.a)
                    : s.kind == Step::kRecv ? inBounds(r, s.dst)
                    : s.kind == Step::kCopy || s.isHost() ? inBounds(r, s.a) && inBounds(r, s.dst)
                                            : inBounds(r, s.a) && inBounds(r, s.b) && inBounds(r, s.dst);
          if (s.isHost() && (base.hosts == nullptr || !base.host_steps)) fail(r, p, "a host step without host steps");
          if (!ok) fail(r, p, "slice out of its buffer's bounds\n" + describeSchedule(ranks[r].schedule));
        }
      }
    }
  }
  if (!result.ok) return result;
  auto pointer = [&](int r, const Slice& s) { return ranks[r].bases[s.buffer] + s.offset * es; };
  auto range = [&](int r, const Slice& s) { return Range{pointer(r, s), pointer(r, s) + s.count * es}; };

  std::map<std::pair<int, int>, std::deque<Message>> channels;
  // Host steps (the node engine) as messages between the host's ranks on channels of their own: rank r sends
  // each other rank of its host what that rank needs (its block of a reduce-scatter, r's part of an all-gather,
  // r's whole vector of an all-reduce).
  std::map<std::pair<int, int>, std::deque<Message>> host_channels;
  const auto hostRanks = [&](int r) -> const std::vector<int>& {
    return base.hosts->ranks_of[static_cast<size_t>(base.hosts->host_of[static_cast<size_t>(r)])];
  };
  const auto hostBlock = [&](const Step& s) { return s.kind == Step::kHostReduceScatter ? s.dst.count : s.a.count; };
  std::vector<bool> sent(n, false);
  bool progress = true;
  while (progress && result.ok) {
    progress = false;
    for (int r = 0; r < n && result.ok; ++r) {
      RankState& st = ranks[r];
      if (st.phase >= st.schedule.phases.size()) continue;
      const Phase& ph = st.schedule.phases[st.phase];
      if (!sent[r]) {
        // Races inside a phase: receives write while sends read and other receives write.
        // (A host step's own input and output may overlap: the engine runs in place.)
        std::vector<std::pair<Range, size_t>> reads, writes;  // with the index of the step
        for (size_t k = 0; k < ph.comm.size(); ++k) {
          const Step& s = ph.comm[k];
          if (s.isHost()) {
            const size_t all = hostBlock(s) * hostRanks(r).size();
            const bool fits = s.kind == Step::kHostAllReduce ? s.a.count == s.dst.count
                              : s.kind == Step::kHostReduceScatter ? s.a.count == all
                                                                   : s.dst.count == all;
            if (!fits) fail(r, st.phase, "host step sizes do not fit the host");
            reads.push_back({range(r, s.a), k});
            writes.push_back({range(r, s.dst), k});
            continue;
          }
          if (s.peer < 0 || s.peer >= n || s.peer == r) fail(r, st.phase, "bad peer " + std::to_string(s.peer));
          if (s.kind == Step::kSend) reads.push_back({range(r, s.a), k});
          else writes.push_back({range(r, s.dst), k});
        }
        if (!result.ok) break;
        for (size_t i = 0; i < writes.size(); ++i) {
          for (const auto& rd : reads) {
            if (rd.second != writes[i].second && writes[i].first.overlaps(rd.first)) fail(r, st.phase, "receive overlaps a send");
          }
          for (size_t j = i + 1; j < writes.size(); ++j) if (writes[i].first.overlaps(writes[j].first)) fail(r, st.phase, "receives overlap");
        }
        for (const Step& s : ph.comm) {
          if (s.isHost()) {
            const std::vector<int>& host = hostRanks(r);
            const size_t block = hostBlock(s) * es;
            for (size_t q = 0; q < host.size(); ++q) {
              if (host[q] == r) continue;
              const uint8_t* p = pointer(r, s.a) + (s.kind == Step::kHostReduceScatter ? q * block : 0);
              host_channels[{r, host[q]}].push_back(Message{std::vector<uint8_t>(p, p + block), result.heard_from[r]});
            }
            continue;
          }
          if (s.kind != Step::kSend) continue;
          const uint8_t* p = pointer(r, s.a);
          channels[{r, s.peer}].push_back(Message{std::vector<uint8_t>(p, p + s.a.count * es), result.heard_from[r]});
        }
        sent[r] = true;
        progress = true;
      }
      // All receives of the phase must be available (taken in order per peer).
      std::map<int, size_t> needed, host_needed;
      for (const Step& s : ph.comm) {
        if (s.kind == Step::kRecv) ++needed[s.peer];
        if (!s.isHost()) continue;
        for (int q : hostRanks(r)) if (q != r) ++host_needed[q];
      }
      bool ready = true;
      for (auto& [peer, k] : needed) ready = ready && channels[{peer, r}].size() >= k;
      for (auto& [peer, k] : host_needed) ready = ready && host_channels[{peer, r}].size() >= k;
      if (!ready) continue;
      for (const Step& s : ph.comm) {
        if (!s.isHost()) continue;
        // Every rank's contribution in local order (this rank's from its own buffer), then the result at once.
        const std::vector<int>& host = hostRanks(r);
        const size_t block = hostBlock(s) * es;
        const size_t local = static_cast<size_t>(base.hosts->local_of[static_cast<size_t>(r)]);
        std::vector<std::vector<uint8_t>> parts(host.size());
        for (size_t q = 0; q < host.size(); ++q) {
          if (host[q] == r) {
            const uint8_t* p = pointer(r, s.a) + (s.kind == Step::kHostReduceScatter ? local * block : 0);
            parts[q].assign(p, p + block);
            continue;
          }
          Message m = std::move(host_channels[{host[q], r}].front());
          host_channels[{host[q], r}].pop_front();
          parts[q] = std::move(m.bytes);
          for (int x = 0; x < n; ++x) if (m.heard[x]) result.heard_from[r][x] = true;
        }
        uint8_t* to = pointer(r, s.dst);
        if (s.kind == Step::kHostAllGather) {
          for (size_t q = 0; q < host.size(); ++q) if (block > 0) std::memcpy(to + q * block, parts[q].data(), block);
          continue;
        }
        if (block == 0) continue;
        std::memcpy(to, parts[0].data(), block);
        for (size_t q = 1; q < host.size(); ++q) reduceElements(type, op, to, to, parts[q].data(), s.dst.count);
      }
      for (const Step& s : ph.comm) {
        if (s.kind != Step::kRecv) continue;
        Message m = std::move(channels[{s.peer, r}].front());
        channels[{s.peer, r}].pop_front();
        if (m.bytes.size() != s.dst.count * es) {
          fail(r, st.phase, "expected " + std::to_string(s.dst.count * es) + " bytes from " + std::to_string(s.peer) +
                                ", got " + std::to_string(m.bytes.size()));
          break;
        }
        if (!m.bytes.empty()) std::memcpy(pointer(r, s.dst), m.bytes.data(), m.bytes.size());
        for (int q = 0; q < n; ++q) if (m.heard[q]) result.heard_from[r][q] = true;
      }
      for (const Step& s : ph.local) {
        if (s.kind == Step::kCopy) {
          if (s.a.count != s.dst.count) fail(r, st.phase, "copy of different sizes");
          if (s.a.count > 0 && pointer(r, s.a) != pointer(r, s.dst)) std::memmove(pointer(r, s.dst), pointer(r, s.a), s.a.count * es);
        } else {
          if (s.a.count != s.dst.count || s.b.count != s.dst.count) fail(r, st.phase, "reduce of different sizes");
          reduceElements(type, op, pointer(r, s.dst), pointer(r, s.a), pointer(r, s.b), s.dst.count);
        }
      }
      ++st.phase;
      sent[r] = false;
      progress = true;
    }
  }
  for (int r = 0; r < n && result.ok; ++r) {
    if (ranks[r].phase < ranks[r].schedule.phases.size()) {
      fail(r, ranks[r].phase, "deadlock: waiting forever\n" + describeSchedule(ranks[r].schedule));
    }
  }
  for (auto& [pair, queue] : host_channels) {
    if (!queue.empty() && result.ok) fail(pair.second, 0, "host step message(s) from " + std::to_string(pair.first) + " never taken");
  }
  for (auto& [pair, queue] : channels) {
    if (!queue.empty() && result.ok) {
      fail(pair.second, 0, std::to_string(queue.size()) + " message(s) from " + std::to_string(pair.first) + " never received");
    }
  }
  if (op == mscAvg && result.ok) {
    for (int r = 0; r < n; ++r) {
      const Slice& res = ranks[r].schedule.result;
      if (res.count > 0) finishAverage(type, pointer(r, res), res.count, n);
    }
  }
  return result;
}

}  // namespace megascale::testing
