#include "collectives/memory/staging.h"

#include <algorithm>
#include <map>
#include <utility>

namespace megascale::memory {

namespace {

bool isTransferStep(const Step& step) { return step.kind == Step::kSend || step.kind == Step::kRecv; }

using PeerDirection = std::pair<int, bool>;  // (peer, sending)

PeerDirection directionOf(const Step& step) { return {step.peer, step.kind == Step::kSend}; }

const Slice& dataOf(const Step& step) { return step.kind == Step::kSend ? step.a : step.dst; }

size_t chunksOf(size_t count, size_t chunk) { return count == 0 ? 1 : (count + chunk - 1) / chunk; }

// A peer-direction's slots, used in turn. It has at least as many as the transfers it carries in one phase, so
// that transfers running side by side never share a slot.
struct Ring {
  size_t base = 0;
  size_t slots = 0;
  size_t next = 0;
};

std::map<PeerDirection, Ring> ringsFor(const Schedule& s, size_t plan_slots, size_t chunk, size_t* staging_count) {
  std::map<PeerDirection, Ring> rings;
  for (const Phase& phase : s.phases) {
    std::map<PeerDirection, size_t> side_by_side;
    for (const Step& step : phase.comm) {
      if (isTransferStep(step)) ++side_by_side[directionOf(step)];
    }
    for (const auto& [direction, count] : side_by_side) {
      Ring& ring = rings[direction];
      ring.slots = std::max({ring.slots, plan_slots, count});
    }
  }
  size_t base = 0;
  for (auto& [direction, ring] : rings) {
    ring.base = base;
    base += ring.slots * chunk;
  }
  *staging_count = base;
  return rings;
}

}  // namespace

std::string StagingPlan::describe() const {
  const bool mib = chunk_bytes % (size_t{1} << 20) == 0;
  return std::to_string(slots) + " x " + std::to_string(mib ? chunk_bytes >> 20 : chunk_bytes >> 10) +
         (mib ? " MiB" : " KiB") + " per peer and direction";
}

// A phase whose transfers take up to M chunks becomes M + 1 phases: phase j sends and receives chunk j - 1 of
// every transfer, then copies chunk j of each send into its slot and chunk j - 1 of each receive out of its slot;
// the last one runs the phase's own local steps after them.
StagedSchedule stageTransfers(const Schedule& s, size_t element_bytes, const StagingPlan& plan, uint16_t staging_buffer) {
  const size_t chunk = std::max<size_t>(1, plan.chunk_bytes / std::max<size_t>(1, element_bytes));
  StagedSchedule out;
  std::map<PeerDirection, Ring> rings = ringsFor(s, std::max<size_t>(1, plan.slots), chunk, &out.staging_count);
  out.peers = rings.size();
  out.schedule.scratch_count = s.scratch_count;
  out.schedule.result = s.result;
  for (const Phase& phase : s.phases) {
    size_t most = 0;
    for (const Step& step : phase.comm) {
      if (isTransferStep(step)) most = std::max(most, chunksOf(dataOf(step).count, chunk));
    }
    if (most == 0) {
      out.schedule.phases.push_back(phase);
      continue;
    }
    std::vector<Phase> expanded(most + 1);
    for (const Step& step : phase.comm) {
      if (!isTransferStep(step)) expanded[0].comm.push_back(step);
    }
    for (size_t j = 0; j < most; ++j) {
      for (const Step& step : phase.comm) {
        if (!isTransferStep(step)) continue;
        const Slice& data = dataOf(step);
        if (j >= chunksOf(data.count, chunk)) continue;
        const Slice piece{data.buffer, data.offset + j * chunk, std::min(chunk, data.count - std::min(data.count, j * chunk))};
        Ring& ring = rings[directionOf(step)];
        const Slice slot{staging_buffer, ring.base + (ring.next++ % ring.slots) * chunk, piece.count};
        if (step.kind == Step::kSend) {
          expanded[j].local.push_back(Step{Step::kCopy, -1, piece, {}, slot});
          expanded[j + 1].comm.push_back(Step{Step::kSend, step.peer, slot, {}, {}});
        } else {
          expanded[j + 1].comm.push_back(Step{Step::kRecv, step.peer, {}, {}, slot});
          expanded[j + 1].local.push_back(Step{Step::kCopy, -1, slot, {}, piece});
        }
      }
    }
    expanded[most].local.insert(expanded[most].local.end(), phase.local.begin(), phase.local.end());
    for (Phase& p : expanded) {
      if (!p.comm.empty() || !p.local.empty()) out.schedule.phases.push_back(std::move(p));
    }
  }
  return out;
}

}  // namespace megascale::memory
