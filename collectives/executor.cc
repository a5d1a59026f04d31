#include "collectives/executor.h"

#include <poll.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "collectives/dtype.h"
#include "collectives/reduce_kernels.h"
#include "common/log.h"

namespace megascale {

namespace {

constexpr int kSocketWaitCapMs = 10;
// A connection under way is looked at again at least this often (the cap only bounds how late a deadline or an
// abort is seen: its descriptors wake the wait when it moves).
constexpr int kConnectWaitCapMs = 100;
// How many steps the window (kDataFlowWindowPhases) may hold: the dependency check of an entering step looks at
// every unfinished step in it.
constexpr size_t kWindowSteps = 2048;

}  // namespace

// A step of the schedule that has entered the window: where it is in program order and how far it has got.
struct ScheduleRun::Node {
  const Step* step;
  transport::SendComm* send = nullptr;
  transport::RecvComm* recv = nullptr;
  transport::Request* request = nullptr;
  uint64_t host_ticket = 0;  // host steps: the host stage's ticket
  uint64_t engine_ticket = 0;  // local steps on device buffers: the engine queue's ticket
  enum State : uint8_t { kWaiting, kPosted, kDone } state = kWaiting;
  size_t deps_begin = 0, deps_end = 0;  // in the run's flat list of earlier nodes this one must wait for
  bool isTransfer() const { return step->kind == Step::kSend || step->kind == Step::kRecv; }
  bool isComm() const { return isTransfer() || step->isHost(); }
  /// What orders this step with others: its comm, or the host stage (host steps are one stream per host).
  const void* channel(const HostStage* host) const {
    if (step->isHost()) return host;
    return step->kind == Step::kSend ? static_cast<const void*>(send) : static_cast<const void*>(recv);
  }
};

// What a run on device buffers holds: the space, its queue, and the device scratch and host staging it took.
// Whatever the run's end, they are freed only once the queue has finished what it was given; a device that does
// not finish within kDeviceReleaseWait (a hung kernel, after the run failed on its timeout) keeps them: memory
// the device may still write is never handed back, and the caller is not held up.
struct DeviceRun {
  static constexpr std::chrono::milliseconds kDeviceReleaseWait{1000};
  memory::MemorySpace* space = nullptr;
  memory::EngineQueue* queue = nullptr;
  std::unique_ptr<memory::EngineQueue> own_queue;
  void* scratch = nullptr;
  void* staging = nullptr;
  memory::StagedSchedule staged;
  uint64_t average_ticket = 0;  // the division of mscAvg, queued once the last phase is done
  bool averaged = false;
  size_t posted = 0;  // local steps queued and not seen done
  DeviceRun() = default;
  DeviceRun(const DeviceRun&) = delete;
  DeviceRun& operator=(const DeviceRun&) = delete;
  ~DeviceRun() {
    if (queue != nullptr && (posted > 0 || (average_ticket != 0 && !averaged))) {
      const Status drained = queue->drain(kDeviceReleaseWait);
      if (!drained.isOk()) {
        MSC_LOG_WARN("%s: an operation's device work is still queued (%s): its scratch and staging stay allocated",
                     space->name().c_str(), drained.message().c_str());
        return;
      }
    }
    if (space != nullptr) {
      if (scratch != nullptr) space->release(scratch);
      if (staging != nullptr) space->releaseStaging(staging);
    }
  }
};

// Everything a run keeps between advances (the locals of a blocking executor).
struct ScheduleRun::State {
  const Schedule* plan;  // the caller's schedule, or its staged rewrite (device buffers)
  std::vector<void*> buffers;
  mscDataType_t type;
  mscRedOp_t op;
  PeerLinks& links;
  ExecutionContext ctx;
  size_t es;
  bool started = false;
  std::unique_ptr<uint8_t[]> owned;  // scratch not from the cache

  std::vector<Node> nodes;
  std::vector<StepAccess> accesses;  // per node
  std::vector<size_t> deps;          // flat: node i waits for deps[deps_begin, deps_end)
  std::vector<size_t> phase_first;   // first node of each admitted phase
  size_t admitted = 0;               // phases in the window so far
  size_t oldest = 0;                 // oldest phase with a step not done; its first node is phase_first[oldest]
  size_t unconnected_from = SIZE_MAX;  // the oldest phase when a phase ahead found a comm not connected
  bool check_incoming = true;          // look at the listeners before the next connection attempt

  bool timeline = false;  // MEGASCALE_DEBUG=3: a timeline line per phase
  Clock::time_point started_at;
  double oldest_since_ms = 0;

  uint32_t host_steps_started = 0;
  HostStage* host_in_use = nullptr;  // set once a host step started: a run that ends early must stop the stage
  bool finished = false;
  DeviceRun device;  // device buffers only

  Deadline deadline{};
  IdleBackoff backoff;
  std::vector<const void*> blocked;  // comms with an earlier transfer not posted yet in this pass
  uint32_t spins = 0;

  State(const Schedule& s, std::vector<void*> b, mscDataType_t t, mscRedOp_t o, PeerLinks& l, ExecutionContext c)
      : plan(&s), buffers(std::move(b)), type(t), op(o), links(l), ctx(std::move(c)), es(dtypeSize(t)) {}

  uint8_t* at(const Slice& slice) const { return static_cast<uint8_t*>(buffers[slice.buffer]) + slice.offset * es; }
  Status fail(ErrorCode code, const std::string& why) const {
    return Status(code, ctx.operation + ": rank " + std::to_string(ctx.rank) + ": " + why);
  }
  bool overlap(const Slice& x, const Slice& y) const {
    return x.count > 0 && y.count > 0 && at(x) < at(y) + y.count * es && at(y) < at(x) + x.count * es;
  }
  bool ready(const Node& n) const {
    for (size_t d = n.deps_begin; d < n.deps_end; ++d) {
      if (nodes[deps[d]].state != Node::kDone) return false;
    }
    return true;
  }

  Status start();
  Status setUpDevice();
  Status admit(size_t p, bool connect, bool* pending);
  Status runLocal(Node& n);
  Status testLocal(Node& n, bool* moved);
  Status averageOnDevice(bool* done);
  Status startHostStep(const Step& step, uint64_t* ticket);
  Status pass(bool* moved, bool* slot_wait);
  void retireFinishedPhases();
  Status checkStalled();
  void noteWaitingFor() const;
  Status waitToConnect(RunWait& wait);
  bool aborted() const { return ctx.aborted != nullptr && ctx.aborted->load(std::memory_order_relaxed); }
  bool sleepOnSockets(RunWait& wait);
};

// Scratch, and the addresses of every peer not connected yet in one store round trip (not one each).
Status ScheduleRun::State::start() {
  started = true;
  if (buffers.size() <= kScratch) buffers.resize(kScratch + 1, nullptr);
  MSC_RETURN_IF_ERROR(setUpDevice());
  uint8_t* scratch = nullptr;
  if (plan->scratch_count > 0) {
    const size_t bytes = plan->scratch_count * es;
    if (device.space != nullptr) {
      device.scratch = device.space->allocate(bytes);
      scratch = static_cast<uint8_t*>(device.scratch);
    } else if (ctx.scratch != nullptr) {
      scratch = ctx.scratch->get(bytes, owned);
    } else {
      owned.reset(new (std::nothrow) uint8_t[bytes]);
      scratch = owned.get();
    }
    if (scratch == nullptr) return fail(ErrorCode::kSystem, "cannot allocate " + std::to_string(bytes) + " bytes of scratch");
  }
  buffers[kScratch] = scratch;
  std::vector<int> unconnected;
  for (const Phase& phase : plan->phases) {
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
  phase_first.assign(plan->phases.size() + 1, 0);
  timeline = log::enabled(log::kTrace);
  started_at = Clock::now();
  deadline = deadlineAfter(ctx.timeout);
  return Status::ok();
}

namespace {

std::string bufferName(size_t i) {
  if (i == kInput) return "input";
  if (i == kOutput) return "output";
  return "buffer " + std::to_string(i - kUser);
}

}  // namespace

// The operation's memory space, found once from its buffers' addresses. Device buffers (all in one space): the
// transfers stage through host memory (memory/staging.h) and the local steps go to the space's queue.
Status ScheduleRun::State::setUpDevice() {
  if (ctx.host_buffers) return Status::ok();
  memory::MemorySpace* space = nullptr;
  size_t space_at = 0, host_at = SIZE_MAX;
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (i == kScratch || buffers[i] == nullptr) continue;
    memory::MemorySpace* here = nullptr;
    Status s = memory::spaceOf(buffers[i], &here);
    if (!s.isOk()) return fail(s.code(), "the " + bufferName(i) + ": " + s.message());
    if (here == nullptr) {
      host_at = std::min(host_at, i);
    } else if (space == nullptr) {
      space = here;
      space_at = i;
    } else if (here != space) {
      return fail(ErrorCode::kInvalidArgument, "the " + bufferName(space_at) + " is " + space->name() + " memory and the " +
                                                   bufferName(i) + " " + here->name() +
                                                   " memory: an operation's buffers lie in one memory space");
    }
  }
  if (space == nullptr) return Status::ok();
  if (host_at != SIZE_MAX) {
    return fail(ErrorCode::kInvalidArgument, "the " + bufferName(space_at) + " is " + space->name() + " memory and the " +
                                                 bufferName(host_at) +
                                                 " host memory: an operation's buffers lie in one memory space");
  }
  for (const Phase& phase : plan->phases) {
    for (const Step& step : phase.comm) {
      if (step.isHost()) return fail(ErrorCode::kInternal, "a shared-memory (node engine) step on " + space->name() + " buffers");
    }
  }
  device.space = space;
  Status s = ctx.queues != nullptr ? ctx.queues->queueFor(space, &device.queue) : space->openQueue(&device.own_queue);
  if (!s.isOk()) return fail(s.code(), space->name() + ": " + s.message());
  if (device.own_queue) device.queue = device.own_queue.get();
  device.staged = memory::stageTransfers(*plan, es, ctx.staging, static_cast<uint16_t>(buffers.size()));
  plan = &device.staged.schedule;
  if (device.staged.staging_count > 0) {
    const size_t bytes = device.staged.staging_count * es;
    device.staging = space->allocateStaging(bytes);
    if (device.staging == nullptr) {
      return fail(ErrorCode::kSystem, "cannot allocate " + std::to_string(bytes) + " bytes of host staging (" +
                                          ctx.staging.describe() + ")");
    }
    buffers.push_back(device.staging);
  }
  return Status::ok();
}

// Admits phase p. Steps run as data flow within a window of phases: a step starts once every earlier step whose
// bytes it overlaps (read after write, write after read or write; on the real addresses, so in-place buffers
// count) has finished, and transfers on one comm are posted in program order (that is how both ranks match
// them). A schedule written as lockstep phases thus runs each chunk of a pipelined schedule as soon as its own
// data is ready, instead of waiting for every chunk of the phase. Transfers of one phase never wait for each
// other (they always ran concurrently). `connect` (the oldest phase only) opens connections, all of the phase's
// at once; *pending while one is under way. Phases ahead enter only on comms already connected.
Status ScheduleRun::State::admit(size_t p, bool connect, bool* pending) {
  *pending = false;
  const Phase& phase = plan->phases[p];
  const size_t first = nodes.size();
  for (const auto* steps : {&phase.comm, &phase.local}) {
    for (const Step& step : *steps) {
      Node n{&step};
      if (step.kind == Step::kSend) {
        if (connect) {
          MSC_RETURN_IF_ERROR(links.trySendComm(step.peer, &n.send));
        } else {
          n.send = links.connectedSendComm(step.peer);
        }
        if (n.send == nullptr) *pending = true;
      } else if (step.kind == Step::kRecv) {
        if (connect) {
          MSC_RETURN_IF_ERROR(links.tryRecvComm(step.peer, &n.recv));
          if (n.recv == nullptr && check_incoming) {  // it arrives through the listeners (only then: a call each)
            MSC_RETURN_IF_ERROR(links.pollIncoming());
            check_incoming = false;
            MSC_RETURN_IF_ERROR(links.tryRecvComm(step.peer, &n.recv));
          }
        } else {
          n.recv = links.connectedRecvComm(step.peer);
        }
        if (n.recv == nullptr) *pending = true;
      }
      nodes.push_back(n);
      accesses.push_back(accessOf(step));
    }
  }
  if (*pending) {
    nodes.resize(first);
    accesses.resize(first);
    // A peer may be connecting to us while we connect to it: its handshake moves through our listeners.
    if (connect && check_incoming) {
      MSC_RETURN_IF_ERROR(links.pollIncoming());
      check_incoming = false;
    }
    return Status::ok();
  }
  const auto conflict = [&](const StepAccess& earlier, const StepAccess& later) {
    return stepsConflict(earlier, later, [&](const Slice& x, const Slice& y) { return overlap(x, y); });
  };
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
}

// Host buffers: the step runs here and now. Device buffers: it is queued, and done once its ticket is.
Status ScheduleRun::State::runLocal(Node& n) {
  const Step& step = *n.step;
  const bool copy = step.kind == Step::kCopy;
  if (copy && (step.a.count == 0 || at(step.a) == at(step.dst))) {
    n.state = Node::kDone;
    return Status::ok();
  }
  if (device.queue == nullptr) {
    if (copy) {
      std::memmove(at(step.dst), at(step.a), step.a.count * es);
    } else {
      reduceElements(type, op, at(step.dst), at(step.a), at(step.b), step.dst.count);
    }
    n.state = Node::kDone;
    return Status::ok();
  }
  Status s = copy ? device.queue->copy(at(step.dst), at(step.a), step.a.count * es, &n.engine_ticket)
                  : device.queue->reduce(type, op, at(step.dst), at(step.a), at(step.b), step.dst.count, &n.engine_ticket);
  if (!s.isOk()) return fail(s.code(), device.space->name() + ": " + s.message());
  n.state = Node::kPosted;
  ++device.posted;
  return Status::ok();
}

// mscAvg on device buffers: the division is queued once the last phase is done, and the run ends with it.
Status ScheduleRun::State::averageOnDevice(bool* done) {
  *done = false;
  Status s;
  if (device.average_ticket == 0) {
    s = device.queue->divide(type, at(plan->result), plan->result.count, ctx.nranks_for_average, &device.average_ticket);
    if (!s.isOk()) return fail(s.code(), device.space->name() + ": " + s.message());
  }
  s = device.queue->test(device.average_ticket, done);
  if (!s.isOk()) return fail(s.code(), device.space->name() + ": " + s.message());
  device.averaged = *done;
  if (!*done && aborted()) return fail(ErrorCode::kAborted, "aborted by the user");
  if (!*done && Clock::now() > deadline) {
    return fail(ErrorCode::kTimeout, "no progress for " + std::to_string(ctx.timeout.count()) + " ms waiting for the " +
                                         device.space->name() + " engine (the average's division; a hung device?)");
  }
  return Status::ok();
}

// A queued local step: done once the engine says so.
Status ScheduleRun::State::testLocal(Node& n, bool* moved) {
  bool done = false;
  Status s = device.queue->test(n.engine_ticket, &done);
  if (!s.isOk()) return fail(s.code(), device.space->name() + ": " + s.message());
  if (done) {
    n.state = Node::kDone;
    --device.posted;
    *moved = true;
  }
  return Status::ok();
}

bool isLoneHostStep(const Schedule& s) {
  return s.phases.size() == 1 && s.phases[0].local.empty() && s.phases[0].comm.size() == 1 && s.phases[0].comm[0].isHost();
}

Status LoneHostStep::begin(bool* done) const { return run(done); }

Status LoneHostStep::runToEnd() const { return run(nullptr); }

Status LoneHostStep::run(bool* done) const {
  const Step& step = schedule.phases[0].comm[0];
  const size_t es = dtypeSize(type);
  const auto at = [&](const Slice& x) {
    return (x.buffer == kInput ? static_cast<uint8_t*>(const_cast<void*>(in)) : static_cast<uint8_t*>(out)) + x.offset * es;
  };
  node::NodeCall call;
  MSC_RETURN_IF_ERROR(host.callFor(step, at(step.a), at(step.dst), type, op, hostStepTag(tag, 0), describe, &call));
  bool finished = true;
  MSC_RETURN_IF_ERROR(done != nullptr ? host.begin(std::move(call), &finished) : host.runHere(std::move(call)));
  if (done != nullptr) *done = finished;
  if (finished && op == mscAvg && schedule.result.count > 0) {
    finishAverage(type, at(schedule.result), schedule.result.count, nranks_for_average);
  }
  return Status::ok();
}

// Host steps: handed to the host stage in program order. If the run ends early, the stage must let go of the
// buffers (the scratch, the caller's) before the run is gone.
Status ScheduleRun::State::startHostStep(const Step& step, uint64_t* ticket) {
  if (ctx.host == nullptr) {
    return Status(ErrorCode::kInternal, "the schedule has a shared-memory step, but no node engine serves this rank's host");
  }
  const uint32_t ordinal = host_steps_started++;
  node::NodeCall call;
  MSC_RETURN_IF_ERROR(ctx.host->callFor(step, at(step.a), at(step.dst), type, op, hostStepTag(ctx.tag, ordinal),
                                        [ordinal] { return "step " + std::to_string(ordinal); }, &call));
  host_in_use = ctx.host;
  *ticket = ctx.host->start(std::move(call));
  return Status::ok();
}

// One pass over the window: starts what is ready, tests what is posted.
Status ScheduleRun::State::pass(bool* moved, bool* slot_wait) {
  blocked.clear();
  for (size_t i = phase_first[oldest]; i < nodes.size(); ++i) {
    Node& n = nodes[i];
    if (n.state == Node::kDone) continue;
    if (!n.isComm()) {
      if (n.state == Node::kWaiting) {
        if (!ready(n)) continue;
        MSC_RETURN_IF_ERROR(runLocal(n));
        *moved = true;
      }
      if (n.state == Node::kPosted) MSC_RETURN_IF_ERROR(testLocal(n, moved));
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
        *moved = true;
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
        *slot_wait = true;
        continue;
      }
      n.state = Node::kPosted;
      *moved = true;
    }
    if (step.isHost()) {
      if (!ctx.host->done(n.host_ticket, &s)) continue;
      if (!s.isOk()) return fail(s.code(), s.message());
      n.state = Node::kDone;
      *moved = true;
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
    *moved = true;
  }
  return Status::ok();
}

void ScheduleRun::State::retireFinishedPhases() {
  while (oldest < admitted) {
    bool done = true;
    for (size_t i = phase_first[oldest]; i < phase_first[oldest + 1] && done; ++i) done = nodes[i].state == Node::kDone;
    if (!done) break;
    if (timeline) {
      const double now_ms = std::chrono::duration<double, std::milli>(Clock::now() - started_at).count();
      const Phase& phase = plan->phases[oldest];
      MSC_LOG_TRACE("%s: phase %zu/%zu done at %.3f ms (%zu transfers, %zu local steps), %.3f ms as the oldest",
                    ctx.operation.c_str(), oldest, plan->phases.size(), now_ms, phase.comm.size(), phase.local.size(),
                    now_ms - oldest_since_ms);
      oldest_since_ms = now_ms;
    }
    ++oldest;
  }
}

// The oldest phase's connections are under way: fails on an abort or once they take longer than the timeout
// (naming the first peer still missing), else says to sleep until a connection or the listeners move. A
// handshake step waits for the peer, which spinning cannot hurry, and every spin round would cost an accept and
// a receive that find nothing.
Status ScheduleRun::State::waitToConnect(RunWait& wait) {
  if (aborted()) return fail(ErrorCode::kAborted, "aborted by the user");
  if (Clock::now() > deadline) {
    for (const Step& step : plan->phases[oldest].comm) {
      if (step.isHost()) continue;
      const bool send = step.kind == Step::kSend;
      if (send ? links.connectedSendComm(step.peer) == nullptr : links.connectedRecvComm(step.peer) == nullptr) {
        Status t = links.connectTimeout(step.peer, send, ctx.timeout);
        return fail(t.code(), t.message());
      }
    }
  }
  wait.fds.clear();
  if (links.appendConnectingReadiness(wait.fds)) {
    wait.incoming_from = wait.fds.size();
    if (links.appendIncomingReadiness(wait.fds) && !wait.fds.empty()) {
      wait.kind = RunWait::kPoll;
      wait.cap_ms = kConnectWaitCapMs;
      return Status::ok();
    }
  }
  check_incoming = true;  // napping instead: look at the listeners on the next try
  wait.pause = backoff.next();
  return Status::ok();
}

// Every 64 idle rounds: incoming connections, and whether the oldest phase has waited too long.
Status ScheduleRun::State::checkStalled() {
  if ((++spins & 63) != 0) return Status::ok();
  Status s = links.pollIncoming();
  if (!s.isOk()) return fail(s.code(), s.message());
  noteWaitingFor();
  // A host step in flight has the engine's own timeout, and its error names the host's rank it waited for:
  // let that one report.
  const bool host_step_running = std::any_of(nodes.begin() + static_cast<std::ptrdiff_t>(phase_first[oldest]), nodes.end(),
                                             [](const Node& n) { return n.state == Node::kPosted && n.step->isHost(); });
  if (Clock::now() > deadline && host_step_running) deadline = deadlineAfter(ctx.timeout);
  if (Clock::now() <= deadline) return Status::ok();
  std::string waiting;
  for (size_t i = phase_first[oldest]; i < phase_first[oldest + 1]; ++i) {
    const Node& n = nodes[i];
    if (n.state == Node::kDone || (!n.isComm() && n.state != Node::kPosted)) continue;
    waiting += (waiting.empty() ? "" : ", ");
    if (n.step->isHost()) waiting += "the shared-memory stage among the host's " + ctx.host->describeHost();
    else if (!n.isComm()) waiting += "the " + device.space->name() + " engine";
    else waiting += std::string(n.step->kind == Step::kSend ? "send to " : "receive from ") + links.describePeer(n.step->peer);
  }
  return fail(ErrorCode::kTimeout, "no progress for " + std::to_string(ctx.timeout.count()) + " ms in phase " +
                                       std::to_string(oldest) + " waiting for " + waiting +
                                       " (a peer hung or died; MEGASCALE_TIMEOUT_MS sets the limit)");
}

// For the flight recorder: the peer of the oldest phase's first unfinished transfer (a host step waits on the
// host's ranks, which the node engine names when it times out).
void ScheduleRun::State::noteWaitingFor() const {
  if (ctx.waiting_for == nullptr) return;
  int peer = -1;
  for (size_t i = phase_first[oldest]; i < phase_first[oldest + 1] && peer < 0; ++i) {
    const Node& n = nodes[i];
    if (n.state != Node::kDone && n.isComm() && !n.step->isHost()) peer = n.step->peer;
  }
  ctx.waiting_for->store(peer, std::memory_order_relaxed);
}

// The descriptors of posted transfers, then the rank's listeners (a lazy stripe of a connection a transfer waits
// on, or a peer connecting). False when some transfer offers no descriptor: on oversubscribed cores a timer nap
// per 0.6 ms per waiting thread cost a sixth of the compute beside it.
bool ScheduleRun::State::sleepOnSockets(RunWait& wait) {
  wait.fds.clear();
  for (size_t i = phase_first[oldest]; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.state != Node::kPosted || !n.isTransfer()) continue;
    const bool offered = n.send != nullptr ? n.send->appendReadiness(wait.fds) : n.recv->appendReadiness(wait.fds);
    if (!offered) return false;
  }
  if (wait.fds.empty()) return false;
  wait.incoming_from = wait.fds.size();
  if (!links.appendIncomingReadiness(wait.fds)) wait.fds.resize(wait.incoming_from);
  wait.kind = RunWait::kPoll;
  wait.cap_ms = kSocketWaitCapMs;
  return true;
}

ScheduleRun::ScheduleRun(const Schedule& schedule, std::vector<void*> buffers, mscDataType_t type, mscRedOp_t op,
                         PeerLinks& links, ExecutionContext ctx)
    : state_(std::make_unique<State>(schedule, std::move(buffers), type, op, links, std::move(ctx))) {}

ScheduleRun::~ScheduleRun() {
  if (state_->host_in_use != nullptr && !state_->finished) state_->host_in_use->stopAndWait();
}

Status ScheduleRun::advance(bool* done) {
  State& st = *state_;
  *done = false;
  const auto finish = [&](Status s) {
    *done = true;
    if (!s.isOk()) return s;
    st.finished = true;
    if (st.op == mscAvg && st.plan->result.count > 0 && st.device.queue == nullptr) {
      finishAverage(st.type, st.at(st.plan->result), st.plan->result.count, st.ctx.nranks_for_average);
    }
    return s;
  };
  if (!st.started) {
    Status s = st.start();
    if (!s.isOk()) return finish(s);
  }
  if (wait_.kind == RunWait::kPoll && wait_.incomingMayHaveMoved()) {
    st.check_incoming = true;
    if (st.admitted > st.oldest) {  // a transfer waits: a lazy stripe or a peer may have arrived
      Status s = st.links.pollIncoming();
      if (!s.isOk()) return finish(st.fail(s.code(), s.message()));
      st.check_incoming = false;
    }
  }
  wait_.kind = RunWait::kIdle;
  while (st.oldest < st.plan->phases.size()) {
    if (st.admitted == st.oldest) {
      bool pending = false;
      Status s = st.admit(st.oldest, true, &pending);
      if (!s.isOk()) return finish(st.fail(s.code(), s.message()));
      if (pending) {
        s = st.waitToConnect(wait_);
        return s.isOk() ? s : finish(s);
      }
    }
    // Phases ahead join while the window has room; one whose comms are not connected yet waits to be the oldest.
    while (st.admitted < st.plan->phases.size() && st.admitted < st.oldest + kDataFlowWindowPhases &&
           st.unconnected_from != st.oldest && st.nodes.size() - st.phase_first[st.oldest] < kWindowSteps) {
      bool pending = false;
      (void)st.admit(st.admitted, false, &pending);
      if (pending) st.unconnected_from = st.oldest;
    }
    bool moved = false, slot_wait = false;
    Status s = st.pass(&moved, &slot_wait);
    if (!s.isOk()) return finish(s);
    st.retireFinishedPhases();
    if (moved) {
      st.backoff.reset();
      st.deadline = deadlineAfter(st.ctx.timeout);
      continue;
    }
    if (st.oldest >= st.plan->phases.size()) break;
    if (st.aborted()) return finish(st.fail(ErrorCode::kAborted, "aborted by the user"));
    s = st.checkStalled();
    if (!s.isOk()) return finish(s);
    const bool sockets_first = st.backoff.socketsFirst() || (st.ctx.shared_driver && st.backoff.pastSpins());
    // Device work completes without a descriptor to wake a poll: while some is queued, the run naps instead.
    if (!slot_wait && sockets_first && st.device.posted == 0 && st.sleepOnSockets(wait_)) {
      st.backoff.rested();
      return Status::ok();
    }
    wait_.pause = st.backoff.next();
    return Status::ok();
  }
  if (st.device.queue != nullptr && st.op == mscAvg && st.plan->result.count > 0) {
    bool averaged = false;
    Status s = st.averageOnDevice(&averaged);
    if (!s.isOk()) return finish(s);
    if (!averaged) {
      wait_.pause = st.backoff.next();
      return Status::ok();
    }
  }
  return finish(Status::ok());
}

void RunWait::block() {
  if (kind == kPoll) {
    (void)::poll(fds.data(), fds.size(), cap_ms);  // EINTR or a timeout: the run tests again either way
  } else {
    IdleBackoff::spend(pause);
  }
}

bool RunWait::incomingMayHaveMoved() const {
  bool any = false;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i].revents == 0) continue;
    if (i >= incoming_from) return true;
    any = true;
  }
  return !any;
}

Status executeSchedule(const Schedule& schedule, std::vector<void*> buffers, mscDataType_t type, mscRedOp_t op,
                       PeerLinks& links, const ExecutionContext& ctx) {
  ScheduleRun run(schedule, std::move(buffers), type, op, links, ctx);
  return runToEnd(run);
}

Status runToEnd(ScheduleRun& run) {
  while (true) {
    bool done = false;
    Status s = run.advance(&done);
    if (done) return s;
    run.wait().block();
  }
}

uint8_t* ScratchCache::get(size_t wanted, std::unique_ptr<uint8_t[]>& owned) {
  if (wanted <= size) return bytes.get();
  if (wanted > kMaxCachedBytes) {
    owned.reset(new (std::nothrow) uint8_t[wanted]);
    return owned.get();
  }
  registration.reset();  // deregistered, then freed, before the larger block is taken
  bytes.reset();
  bytes.reset(new (std::nothrow) uint8_t[wanted]);
  size = bytes ? wanted : 0;
  registration.reset(registry, bytes.get(), size);
  return bytes.get();
}

}  // namespace megascale
