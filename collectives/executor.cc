#include "collectives/executor.h"

#include <poll.h>

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

}  // namespace

Status executeSchedule(const Schedule& schedule, std::vector<void*> buffers, mscDataType_t type, mscRedOp_t op,
                       PeerLinks& links, const ExecutionContext& ctx) {
  const size_t es = dtypeSize(type);
  std::unique_ptr<uint8_t[]> scratch;
  if (schedule.scratch_count > 0) {
    scratch.reset(new (std::nothrow) uint8_t[schedule.scratch_count * es]);
    if (!scratch) {
      return Status(ErrorCode::kSystem, ctx.operation + ": rank " + std::to_string(ctx.rank) + ": cannot allocate " +
                                            std::to_string(schedule.scratch_count * es) + " bytes of scratch");
    }
  }
  if (buffers.size() <= kScratch) buffers.resize(kScratch + 1, nullptr);
  buffers[kScratch] = scratch.get();
  auto at = [&](const Slice& s) { return static_cast<uint8_t*>(buffers[s.buffer]) + s.offset * es; };
  auto fail = [&](ErrorCode code, const std::string& why) {
    return Status(code, ctx.operation + ": rank " + std::to_string(ctx.rank) + ": " + why);
  };

  std::vector<InFlight> flights;
  for (size_t phase_index = 0; phase_index < schedule.phases.size(); ++phase_index) {
    const Phase& phase = schedule.phases[phase_index];
    Deadline deadline = deadlineAfter(ctx.timeout);
    flights.clear();
    for (const Step& step : phase.comm) {
      InFlight f{&step};
      Status s = step.kind == Step::kSend ? links.sendComm(step.peer, deadline, &f.send)
                                          : links.recvComm(step.peer, deadline, &f.recv);
      if (!s.isOk()) return fail(s.code(), s.message());
      flights.push_back(f);
    }
    size_t remaining = flights.size();
    IdleBackoff backoff;
    std::vector<pollfd> fds;
    uint32_t spins = 0;
    while (remaining > 0) {
      bool moved = false;
      for (InFlight& f : flights) {
        if (f.done) continue;
        const Step& step = *f.step;
        Status s;
        if (f.request == nullptr) {  // post; a null request back means no free slot yet
          if (step.kind == Step::kSend) {
            s = f.send->isend(at(step.a), step.a.count * es, ctx.tag, nullptr, &f.request);
          } else {
            void* dst = at(step.dst);
            size_t capacity = step.dst.count * es;
            s = f.recv->irecv(1, &dst, &capacity, &ctx.tag, nullptr, &f.request);
          }
          if (!s.isOk()) return fail(s.code(), s.message());
          if (f.request == nullptr) continue;
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
