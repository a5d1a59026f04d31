#include "collectives/executor.h"

#include <poll.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "collectives/dtype.h"
#include "collectives/reduce_kernels.h"
#include "common/backoff.h"
#include "common/log.h"

namespace megascale {

namespace {

constexpr int kSocketWaitCapMs = 10;
// How many steps the window (kDataFlowWindowPhases) may hold: the dependency check of an entering step looks at
// every unfinished step in it.
constexpr size_t kWindowSteps = 2048;

// A step of the schedule that has entered the window: where it is in program order and how far it has got.
struct Node {
  const Step* step;
  transport::SendComm* send = nullptr;
  transport::RecvComm* recv = nullptr;
  transport::Request* request = nullptr;
  uint64_t host_ticket = 0;  // host steps: the host stage's ticket
  enum State : uint8_t { kWaiting, kPosted, kDone } state = kWaiting;
  size_t deps_begin = 0, deps_end = 0;  // in the executor's flat list of earlier nodes this one must wait for
  bool isTransfer() const { return step->kind == Step::kSend || step->kind == Step::kRecv; }
  bool isComm() const { return isTransfer() || step->isHost(); }
  /// What orders this step with others: its comm, or the host stage (host steps are one stream per host).
  const void* channel(const HostStage* host) const {
    if (step->isHost()) return host;
    return step->kind == Step::kSend ? static_cast<const void*>(send) : static_cast<const void*>(recv);
  }
};

// The comm a transfer uses: connected now (`connect`, for the oldest phase), or the one already connected
// (phases ahead: kUnavailable when there is none yet, and the phase waits until it is the oldest).
template <typename Comm>
Status commFor(PeerLinks& links, int peer, bool connect, Deadline deadline, Comm** comm,
               Status (PeerLinks::*open)(int, Deadline, Comm**), Comm* (PeerLinks::*connected)(int) const) {
  if (connect) return (links.*open)(peer, deadline, comm);
  *comm = (links.*connected)(peer);
  return *comm != nullptr ? Status::ok() : Status(ErrorCode::kUnavailable, "");
}

// Sleeps until a socket of a posted transfer is ready, or a listener of the rank (a handshake: a lazy stripe
// of a connection a transfer waits on, or a peer connecting), or `cap` passes (the caller checks its deadline
// and the abort flag between waits). *incoming: a listener moved, so pollIncoming() has work. False, without
// sleeping, when some transfer offers no descriptor: on oversubscribed cores a timer nap per 0.6 ms per waiting
// thread cost a sixth of the compute beside it.
bool sleepOnSockets(const std::vector<Node>& nodes, size_t first, const PeerLinks& links, std::vector<pollfd>& fds,
                    int cap_ms, bool* incoming) {
  fds.clear();
  *incoming = false;
  for (size_t i = first; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.state != Node::kPosted || !n.isTransfer()) continue;
    const bool offered = n.send != nullptr ? n.send->appendReadiness(fds) : n.recv->appendReadiness(fds);
    if (!offered) return false;
  }
  if (fds.empty()) return false;
  const size_t transfers = fds.size();
  if (!links.appendIncomingReadiness(fds)) fds.resize(transfers);
  (void)::poll(fds.data(), fds.size(), cap_ms);  // EINTR or a timeout: the loop tests again either way
  *incoming = std::any_of(fds.begin() + static_cast<std::ptrdiff_t>(transfers), fds.end(),
                          [](const pollfd& p) { return p.revents != 0; });
  return true;
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
  {
    // The peers this rank has no connection to yet: their addresses in one store round trip, not one each.
    std::vector<int> unconnected;
    for (const Phase& phase : schedule.phases) {
      for (const Step& step : phase.comm) {
        if (step.isHost() || step.peer < 0) continue;
        const bool connected = step.kind == Step::kSend ? links.connectedSendComm(step.peer) != nullptr
                                                        : links.connectedRecvComm(step.peer) != nullptr;
        if (!connected) unconnected.push_back(step.peer);
      }
    }
    std::sort(unconnected.begin(), unconnected.end());
    unconnected.erase(std::unique(unconnected.begin(), unconnected.end()), unconnected.end());
    if (unconnected.size() > 1) links.prefetch(unconnected);
  }
  buffers[kScratch] = scratch;
  auto at = [&](const Slice& s) { return static_cast<uint8_t*>(buffers[s.buffer]) + s.offset * es; };
  auto fail = [&](ErrorCode code, const std::string& why) {
    return Status(code, ctx.operation + ": rank " + std::to_string(ctx.rank) + ": " + why);
  };

  // Steps run as data flow within a window of phases: a step starts once every earlier step whose bytes it
  // overlaps (read after write, write after read or write; on the real addresses, so in-place buffers count)
  // has finished, and transfers on one comm are posted in program order (that is how both ranks match
  // them). A schedule written as lockstep phases thus runs each chunk of a pipelined schedule as soon as its own
  // data is ready, instead of waiting for every chunk of the phase. Transfers of one phase never wait for each
  // other (they always ran concurrently). A phase enters the window early only on comms already connected.
  const auto overlap = [&](const Slice& x, const Slice& y) {
    return x.count > 0 && y.count > 0 && at(x) < at(y) + y.count * es && at(y) < at(x) + x.count * es;
  };
  const auto conflict = [&](const StepAccess& earlier, const StepAccess& later) {
    return stepsConflict(earlier, later, overlap);
  };
  std::vector<Node> nodes;
  std::vector<StepAccess> accesses;  // per node
  std::vector<size_t> deps;      // flat: node i waits for deps[deps_begin, deps_end)
  std::vector<size_t> phase_first(schedule.phases.size() + 1, 0);  // first node of each admitted phase
  size_t admitted = 0;  // phases in the window so far
  size_t oldest = 0;    // oldest phase with a step not done; its first node is phase_first[oldest]
  size_t unconnected_from = SIZE_MAX;  // the oldest phase when a phase ahead found a comm not connected
  // Admits phase p; `connect` may open connections (only for the oldest phase: the others use what exists).
  const auto admit = [&](size_t p, bool connect, Deadline deadline) -> Status {
    const Phase& phase = schedule.phases[p];
    const size_t first = nodes.size();
    for (const auto* steps : {&phase.comm, &phase.local}) {
      for (const Step& step : *steps) {
        Node n{&step};
        Status st = step.kind == Step::kSend
                        ? commFor(links, step.peer, connect, deadline, &n.send, &PeerLinks::sendComm, &PeerLinks::connectedSendComm)
                    : step.kind == Step::kRecv
                        ? commFor(links, step.peer, connect, deadline, &n.recv, &PeerLinks::recvComm, &PeerLinks::connectedRecvComm)
                        : Status::ok();
        if (!st.isOk()) {
          nodes.resize(first), accesses.resize(first);
          return st;
        }
        nodes.push_back(n);
        accesses.push_back(accessOf(step));
      }
    }
    for (size_t i = first; i < nodes.size(); ++i) {
      Node& n = nodes[i];
      n.deps_begin = deps.size();
      const size_t until = n.isComm() ? first : i;  // a transfer never waits for its own phase's transfers
      for (size_t j = phase_first[oldest]; j < until; ++j) {
        if (nodes[j].state != Node::kDone && conflict(accesses[j], accesses[i])) deps.push_back(j);
      }
      n.deps_end = deps.size();
    }
    phase_first[p + 1] = nodes.size();
    admitted = p + 1;
    return Status::ok();
  };
  const auto ready = [&](const Node& n) {
    for (size_t d = n.deps_begin; d < n.deps_end; ++d) {
      if (nodes[deps[d]].state != Node::kDone) return false;
    }
    return true;
  };
  const auto runLocal = [&](const Step& step) {
    if (step.kind == Step::kCopy) {
      if (step.a.count > 0 && at(step.a) != at(step.dst)) std::memmove(at(step.dst), at(step.a), step.a.count * es);
    } else {
      reduceElements(type, op, at(step.dst), at(step.a), at(step.b), step.dst.count);
    }
  };
  // MEGASCALE_DEBUG=3: a timeline line per phase (when its last step finished, and how long it was the oldest).
  const bool timeline = log::enabled(log::kTrace);
  const auto millisSince = [](Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); };
  const Clock::time_point started = Clock::now();
  double oldest_since_ms = 0;

  // Host steps: handed to the host stage in program order. If the schedule fails, the stage must let go of the
  // buffers (the scratch above, the caller's) before this returns.
  uint32_t host_steps_started = 0;
  struct StopStageOnFailure {
    HostStage* host = nullptr;
    bool finished = false;
    ~StopStageOnFailure() {
      if (host != nullptr && !finished) host->stopAndWait();
    }
  } host_guard;
  const auto startHostStep = [&](const Step& step, uint64_t* ticket) -> Status {
    if (ctx.host == nullptr) {
      return Status(ErrorCode::kInternal, "the schedule has a shared-memory step, but no node engine serves this rank's host");
    }
    const bool scatter = step.kind == Step::kHostReduceScatter;
    const size_t per_rank = scatter ? step.dst.count : step.a.count;
    const size_t all = static_cast<size_t>(ctx.host->size()) * per_rank;
    if ((scatter ? step.a.count : step.dst.count) != all) {
      return Status(ErrorCode::kInternal, "a shared-memory step's slices do not fit the host's " +
                                              std::to_string(ctx.host->size()) + " ranks");
    }
    const uint32_t ordinal = host_steps_started++;
    // The schedule divides an average once at the end; the host's part of the reduction is a sum.
    node::NodeCall call{scatter ? Collective::kReduceScatter : Collective::kAllGather,
                        at(step.a), at(step.dst), per_rank, type, op == mscAvg ? mscSum : op, ctx.tag + 1 + ordinal, nullptr,
                        [ordinal] { return "step " + std::to_string(ordinal); }};
    host_guard.host = ctx.host;
    *ticket = ctx.host->start(std::move(call));
    return Status::ok();
  };

  Deadline deadline = deadlineAfter(ctx.timeout);
  IdleBackoff backoff;
  std::vector<pollfd> fds;
  std::vector<const void*> blocked;  // comms with an earlier transfer not posted yet in this pass
  uint32_t spins = 0;
  while (oldest < schedule.phases.size()) {
    if (admitted == oldest) {
      Status s = admit(oldest, true, deadline);
      if (!s.isOk()) return fail(s.code(), s.message());
    }
    // Phases ahead join while the window has room; one whose comms are not connected yet waits to be the oldest.
    while (admitted < schedule.phases.size() && admitted < oldest + kDataFlowWindowPhases && unconnected_from != oldest &&
           nodes.size() - phase_first[oldest] < kWindowSteps) {
      if (!admit(admitted, false, deadline).isOk()) unconnected_from = oldest;
    }
    bool moved = false, slot_wait = false;
    blocked.clear();
    for (size_t i = phase_first[oldest]; i < nodes.size(); ++i) {
      Node& n = nodes[i];
      if (n.state == Node::kDone) continue;
      if (!n.isComm()) {
        if (!ready(n)) continue;
        runLocal(*n.step);
        n.state = Node::kDone;
        moved = true;
        continue;
      }
      const Step& step = *n.step;
      Status s;
      if (n.state == Node::kWaiting) {
        const void* comm = n.channel(ctx.host);
        if (std::find(blocked.begin(), blocked.end(), comm) != blocked.end()) continue;
        if (!ready(n)) {
          blocked.push_back(comm);
          continue;
        }
        if (step.isHost()) {
          s = startHostStep(step, &n.host_ticket);
          if (!s.isOk()) return fail(s.code(), s.message());
          n.state = Node::kPosted;
          moved = true;
          continue;
        }
        if (step.kind == Step::kSend) {
          s = n.send->isend(at(step.a), step.a.count * es, ctx.tag, nullptr, &n.request);
        } else {
          void* dst = at(step.dst);
          size_t capacity = step.dst.count * es;
          s = n.recv->irecv(1, &dst, &capacity, &ctx.tag, nullptr, &n.request);
        }
        if (!s.isOk()) return fail(s.code(), s.message());
        if (n.request == nullptr) {  // no free slot on this comm yet
          blocked.push_back(comm);
          slot_wait = true;
          continue;
        }
        n.state = Node::kPosted;
        moved = true;
      }
      if (step.isHost()) {
        if (!ctx.host->done(n.host_ticket, &s)) continue;
        if (!s.isOk()) return fail(s.code(), s.message());
        n.state = Node::kDone;
        moved = true;
        continue;
      }
      bool done = false;
      size_t size = 0;
      s = step.kind == Step::kSend ? n.send->test(n.request, &done, &size) : n.recv->test(n.request, &done, &size);
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
      n.state = Node::kDone;
      moved = true;
    }
    // Retire finished phases.
    while (oldest < admitted) {
      bool finished = true;
      for (size_t i = phase_first[oldest]; i < phase_first[oldest + 1] && finished; ++i) finished = nodes[i].state == Node::kDone;
      if (!finished) break;
      if (timeline) {
        const double now_ms = millisSince(started);
        const Phase& phase = schedule.phases[oldest];
        MSC_LOG_TRACE("%s: phase %zu/%zu done at %.3f ms (%zu transfers, %zu local steps), %.3f ms as the oldest",
                      ctx.operation.c_str(), oldest, schedule.phases.size(), now_ms, phase.comm.size(), phase.local.size(),
                      now_ms - oldest_since_ms);
        oldest_since_ms = now_ms;
      }
      ++oldest;
    }
    if (moved) {
      backoff.reset();
      deadline = deadlineAfter(ctx.timeout);
      continue;
    }
    if (oldest >= schedule.phases.size()) break;
    if (ctx.aborted != nullptr && ctx.aborted->load(std::memory_order_relaxed)) {
      return fail(ErrorCode::kAborted, "aborted by the user");
    }
    if ((++spins & 63) == 0) {
      Status s = links.pollIncoming();
      if (!s.isOk()) return fail(s.code(), s.message());
      // A host step in flight has the engine's own timeout, and its error names the host's rank it waited for:
      // let that one report.
      const bool host_step_running = std::any_of(nodes.begin() + static_cast<std::ptrdiff_t>(phase_first[oldest]), nodes.end(),
                                                 [](const Node& n) { return n.state == Node::kPosted && n.step->isHost(); });
      if (Clock::now() > deadline && host_step_running) deadline = deadlineAfter(ctx.timeout);
      if (Clock::now() > deadline) {
        std::string waiting;
        for (size_t i = phase_first[oldest]; i < phase_first[oldest + 1]; ++i) {
          const Node& n = nodes[i];
          if (n.state == Node::kDone || !n.isComm()) continue;
          waiting += (waiting.empty() ? "" : ", ");
          if (n.step->isHost()) waiting += "the shared-memory stage among the host's " + ctx.host->describeHost();
          else waiting += std::string(n.step->kind == Step::kSend ? "send to " : "receive from ") + links.describePeer(n.step->peer);
        }
        return fail(ErrorCode::kTimeout, "no progress for " + std::to_string(ctx.timeout.count()) + " ms in phase " +
                                             std::to_string(oldest) + " waiting for " + waiting +
                                             " (a peer hung or died; MEGASCALE_TIMEOUT_MS sets the limit)");
      }
    }
    bool incoming = false;
    if (!slot_wait && backoff.socketsFirst() && sleepOnSockets(nodes, phase_first[oldest], links, fds, kSocketWaitCapMs, &incoming)) {
      backoff.rested();
      if (incoming) {
        Status s = links.pollIncoming();
        if (!s.isOk()) return fail(s.code(), s.message());
      }
      continue;
    }
    backoff.idle();
  }
  host_guard.finished = true;
  if (op == mscAvg && schedule.result.count > 0) {
    finishAverage(type, at(schedule.result), schedule.result.count, ctx.nranks_for_average);
  }
  return Status::ok();
}

}  // namespace megascale
