#include "collectives/executor.h"

#include <poll.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "collectives/dtype.h"
#include "collectives/reduce_kernels.h"
#include "common/backoff.h"

namespace megascale {

namespace {

constexpr int kSocketWaitCapMs = 10;

struct InFlight {
  const Step* step;
  transport::SendComm* send = nullptr;
  transport::RecvComm* recv = nullptr;
  transport::Request* request = nullptr;
  bool done = false;
};


// Sleeps until a socket of a pending transfer is ready, or `cap` passes (the caller checks its deadline and
// the abort flag between waits). False, without sleeping, when some transfer offers no descriptor: on
// oversubscribed cores a timer nap per 0.6 ms per waiting thread cost a sixth of the compute beside it.
bool sleepOnSockets(const std::vector<InFlight>& flights, std::vector<pollfd>& fds, int cap_ms) {
  fds.clear();
  for (const InFlight& f : flights) {
    if (f.done) continue;
    if (f.request == nullptr) return false;
    const bool offered = f.send != nullptr ? f.send->appendReadiness(fds) : f.recv->appendReadiness(fds);
    if (!offered) return false;
  }
  if (fds.empty()) return false;
  (void)::poll(fds.data(), fds.size(), cap_ms);  // EINTR or a timeout: the loop tests again either way
  return true;
}

// Whether a transfer touches bytes that local steps write (or, for a receive, read).
template <typename At>
bool touchesAny(const Step& transfer, const std::vector<Step>& locals, const At& at, size_t es) {
  const auto overlap = [&](const Slice& x, const Slice& y) {
    return x.count > 0 && y.count > 0 && at(x) < at(y) + y.count * es && at(y) < at(x) + x.count * es;
  };
  const bool is_send = transfer.kind == Step::kSend;
  const Slice& mine = is_send ? transfer.a : transfer.dst;
  for (const Step& l : locals) {
    if (overlap(mine, l.dst)) return true;
    if (!is_send && (overlap(mine, l.a) || (l.kind == Step::kReduce && overlap(mine, l.b)))) return true;
  }
  return false;
}

}  // namespace

uint8_t* ScratchCache::get(size_t wanted, std::unique_ptr<uint8_t[]>& owned) {
  if (wanted <= size) return bytes.get();
  if (wanted > kMaxCachedBytes) {
    owned.reset(new (std::nothrow) uint8_t[wanted]);
    return owned.get();
  }
  bytes.reset();  // free the old block before taking the larger one
  bytes.reset(new (std::nothrow) uint8_t[wanted]);
  size = bytes ? wanted : 0;
  return bytes.get();
}

Status executeSchedule(const Schedule& schedule, std::vector<void*> buffers, mscDataType_t type, mscRedOp_t op,
                       PeerLinks& links, const ExecutionContext& ctx) {
  const size_t es = dtypeSize(type);
  std::unique_ptr<uint8_t[]> owned;
  uint8_t* scratch = nullptr;
  if (schedule.scratch_count > 0) {
    const size_t bytes = schedule.scratch_count * es;
    if (ctx.scratch != nullptr) {
      scratch = ctx.scratch->get(bytes, owned);
    } else {
      owned.reset(new (std::nothrow) uint8_t[bytes]);
      scratch = owned.get();
    }
    if (scratch == nullptr) {
      return Status(ErrorCode::kSystem, ctx.operation + ": rank " + std::to_string(ctx.rank) + ": cannot allocate " +
                                            std::to_string(bytes) + " bytes of scratch");
    }
  }
  if (buffers.size() <= kScratch) buffers.resize(kScratch + 1, nullptr);
  buffers[kScratch] = scratch;
  auto at = [&](const Slice& s) { return static_cast<uint8_t*>(buffers[s.buffer]) + s.offset * es; };
  auto fail = [&](ErrorCode code, const std::string& why) {
    return Status(code, ctx.operation + ": rank " + std::to_string(ctx.rank) + ": " + why);
  };

  // Posts f's step; f.request stays null when its comm has no free slot.
  const auto post = [&](InFlight& f) {
    const Step& step = *f.step;
    if (step.kind == Step::kSend) return f.send->isend(at(step.a), step.a.count * es, ctx.tag, nullptr, &f.request);
    void* dst = at(step.dst);
    size_t capacity = step.dst.count * es;
    return f.recv->irecv(1, &dst, &capacity, &ctx.tag, nullptr, &f.request);
  };
  const auto commOf = [](const InFlight& f) {
    return f.step->kind == Step::kSend ? static_cast<const void*>(f.send) : static_cast<const void*>(f.recv);
  };

  std::vector<InFlight> flights, next;
  bool next_started = false;
  for (size_t phase_index = 0; phase_index < schedule.phases.size(); ++phase_index) {
    const Phase& phase = schedule.phases[phase_index];
    Deadline deadline = deadlineAfter(ctx.timeout);
    if (next_started) {
      flights.swap(next);
    } else {
      flights.clear();
      for (const Step& step : phase.comm) flights.push_back(InFlight{&step});
    }
    next_started = false;
    for (InFlight& f : flights) {
      if (f.send != nullptr || f.recv != nullptr) continue;
      Status s = f.step->kind == Step::kSend ? links.sendComm(f.step->peer, deadline, &f.send)
                                             : links.recvComm(f.step->peer, deadline, &f.recv);
      if (!s.isOk()) return fail(s.code(), s.message());
    }
    size_t remaining = flights.size();
    IdleBackoff backoff;
    std::vector<pollfd> fds;
    uint32_t spins = 0;
    std::vector<const void*> unposted;  // comms with a step not posted yet in this pass
    while (remaining > 0) {
      bool moved = false;
      unposted.clear();
      for (InFlight& f : flights) {
        if (f.done) continue;
        const Step& step = *f.step;
        Status s;
        if (f.request == nullptr) {  // post; a null request back means no free slot yet
          // Messages between two ranks match in the order they are posted: never post past an earlier step
          // of this phase on the same comm.
          const void* comm = commOf(f);
          if (std::find(unposted.begin(), unposted.end(), comm) != unposted.end()) continue;
          s = post(f);
          if (!s.isOk()) return fail(s.code(), s.message());
          if (f.request == nullptr) {
            unposted.push_back(comm);
            continue;
          }
          moved = true;
        }
        bool done = false;
        size_t size = 0;
        s = step.kind == Step::kSend ? f.send->test(f.request, &done, &size) : f.recv->test(f.request, &done, &size);
        if (!s.isOk()) {
          ErrorCode code = s.code() == ErrorCode::kMismatch ? ErrorCode::kMismatch : ErrorCode::kPeerLost;
          return fail(code, std::string(step.kind == Step::kSend ? "send to " : "receive from ") + links.describePeer(step.peer) +
                                " failed: " + s.message() +
                                (code == ErrorCode::kMismatch ? " (do all ranks call the same collectives with the "
                                                                "same counts and types?)"
                                                              : ""));
        }
        if (!done) continue;
        if (step.kind == Step::kRecv && size != step.dst.count * es) {
          return fail(ErrorCode::kMismatch, "expected " + std::to_string(step.dst.count * es) + " bytes from " +
                                                links.describePeer(step.peer) + ", received " + std::to_string(size) +
                                                " (do all ranks pass the same count and type?)");
        }
        f.done = true;
        --remaining;
        moved = true;
      }
      if (moved) {
        backoff.reset();
        deadline = deadlineAfter(ctx.timeout);
        continue;
      }
      if (ctx.aborted != nullptr && ctx.aborted->load(std::memory_order_relaxed)) {
        return fail(ErrorCode::kAborted, "aborted by the user");
      }
      if ((++spins & 63) == 0) {
        Status s = links.pollIncoming();
        if (!s.isOk()) return fail(s.code(), s.message());
        if (Clock::now() > deadline) {
          std::string waiting;
          for (const InFlight& f : flights) {
            if (!f.done) waiting += (waiting.empty() ? "" : ", ") + std::string(f.step->kind == Step::kSend ? "send to " : "receive from ") + links.describePeer(f.step->peer);
          }
          return fail(ErrorCode::kTimeout, "no progress for " + std::to_string(ctx.timeout.count()) +
                                               " ms in phase " + std::to_string(phase_index) + " waiting for " + waiting +
                                               " (a peer hung or died; MEGASCALE_TIMEOUT_MS sets the limit)");
        }
      }
      if (backoff.resting() && sleepOnSockets(flights, fds, kSocketWaitCapMs)) {
        backoff.rested();
        continue;
      }
      backoff.idle();
    }
    // Before this phase's copies and reductions, post the next phase's transfers that touch none of the bytes
    // they read or write, on comms already connected: a pipelined schedule's next chunk then crosses the network
    // while this one is being reduced.
    if (!phase.local.empty() && phase_index + 1 < schedule.phases.size()) {
      next.clear();
      std::vector<const void*> held;  // comms whose earlier step in the next phase waits: later ones wait too
      for (const Step& step : schedule.phases[phase_index + 1].comm) {
        InFlight f{&step};
        if (step.kind == Step::kSend) f.send = links.connectedSendComm(step.peer);
        else f.recv = links.connectedRecvComm(step.peer);
        const void* comm = commOf(f);
        const bool ready = comm != nullptr && std::find(held.begin(), held.end(), comm) == held.end() &&
                           !touchesAny(step, phase.local, at, es);
        if (ready) {
          Status s = post(f);
          if (!s.isOk()) return fail(s.code(), s.message());
        }
        if (comm != nullptr && f.request == nullptr) held.push_back(comm);
        next.push_back(f);
      }
      next_started = true;
    }
    for (const Step& step : phase.local) {
      if (step.kind == Step::kCopy) {
        if (step.a.count > 0 && at(step.a) != at(step.dst)) std::memmove(at(step.dst), at(step.a), step.a.count * es);
      } else {
        reduceElements(type, op, at(step.dst), at(step.a), at(step.b), step.dst.count);
      }
    }
  }
  if (op == mscAvg && schedule.result.count > 0) {
    finishAverage(type, at(schedule.result), schedule.result.count, ctx.nranks_for_average);
  }
  return Status::ok();
}

}  // namespace megascale
