#include "collectives/communicator.h"

#include "common/backoff.h"

#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cstring>

#include "collectives/address_book.h"
#include "bootstrap/local_address.h"
#include "bootstrap/store.h"
#include "collectives/dtype.h"
#include "collectives/executor.h"
#include "topology/host_record.h"
#include "topology/net_interfaces.h"
#include "topology/rails.h"
#include "transport/address_list.h"
#include "transport/net_transport.h"
#include "transport/registry.h"
#include "transport/shm/shm_transport.h"
#include "collectives/algorithms/registry.h"
#include "common/config.h"
#include "common/log.h"

namespace megascale {

namespace {

// Whether a rank's transports include one that shares memory with this host's other ranks (a capability of its
// registry row, not a name): only then does it make a region for the node engine.
bool sharesHostMemory(const std::vector<std::string>& transport_names) {
  return std::any_of(transport_names.begin(), transport_names.end(), [](const std::string& name) {
    const transport::TransportInfo* row = transport::findTransport(name);
    return row != nullptr && row->shares_host_memory;
  });
}

// The network link the cost model assumes: the user's figures, else the slowest selected NIC's speed.
LinkCost networkLinkCost() {
  LinkCost link = LinkCosts{}.network;  // the per-message send overhead stays the default
  const int64_t latency_us = config::getInt("MEGASCALE_NET_LATENCY_US");
  int64_t mbps = config::getInt("MEGASCALE_NET_MBPS");
  if (latency_us < 0 || mbps < 0) {
    throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_NET_MBPS and MEGASCALE_NET_LATENCY_US must be >= 0");
  }
  if (mbps == 0) {
    for (const topology::NetInterface& nic : topology::discoverInterfaces(config::getString("MEGASCALE_NET_IF"))) {
      if (!nic.loopback && nic.speed_mbps > 0 && (mbps == 0 || nic.speed_mbps < mbps)) mbps = nic.speed_mbps;
    }
  }
  if (mbps == 0) mbps = 10000;
  link.latency_s = static_cast<double>(latency_us) * 1e-6;
  link.bytes_per_s = static_cast<double>(mbps) * 1e6 / 8;
  return link;
}

}  // namespace

CommunicatorOptions CommunicatorOptions::fromEnvironment() {
  config::warnUnknownVariablesOnce();
  CommunicatorOptions o;
  o.timeout = config::timeout();
  o.transport = config::getString("MEGASCALE_TRANSPORT");
  o.algorithms = parseAlgorithmRequest(config::getString("MEGASCALE_ALGO"));
  o.local_rank = static_cast<int>(config::getInt("MEGASCALE_LOCAL_RANK"));
  o.local_size = static_cast<int>(config::getInt("MEGASCALE_LOCAL_SIZE"));
  o.host_block = static_cast<int>(config::getInt("MEGASCALE_HOST_BLOCK"));
  o.transport_options = transport::transportOptionsFromConfig();
  o.node_engine = config::getBool("MEGASCALE_SHM_COLLECTIVES");
  o.flight_recorder = config::getBool("MEGASCALE_FLIGHT_RECORDER");
  auto bytes = [](const char* name, int64_t min) {
    int64_t v = config::getInt(name);
    if (v < min) throw Error(ErrorCode::kInvalidArgument, std::string(name) + " must be >= " + std::to_string(min));
    return static_cast<size_t>(v);
  };
  o.node.slot_bytes = bytes("MEGASCALE_SHM_SLOT_BYTES", 4096);
  o.node.one_shot_max = bytes("MEGASCALE_SHM_ONESHOT_MAX", 0);
  o.node.cma_min = bytes("MEGASCALE_SHM_CMA_MIN", 0);
  o.node.cma_min_gather = bytes("MEGASCALE_SHM_CMA_MIN_GATHER", 0);
  o.node.stream_min = bytes("MEGASCALE_SHM_STREAM_MIN", 0);
  o.node.spin = std::chrono::nanoseconds(bytes("MEGASCALE_SHM_SPIN_NS", 0));
  o.inline_bytes = bytes("MEGASCALE_INLINE_BYTES", 0);
  o.staging.chunk_bytes = bytes("MEGASCALE_STAGING_CHUNK_BYTES", 1);
  o.staging.slots = bytes("MEGASCALE_STAGING_SLOTS", 1);
  o.link_costs.network = networkLinkCost();
  return o;
}

namespace {

// This host, as shared memory sees it (boot id and network namespace), hashed (FNV-1a).
uint64_t hostKey() {
  static const uint64_t key = [] {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char ch : transport::hostIdentity()) h = (h ^ ch) * 0x100000001b3ULL;
    return h;
  }();
  return key;
}

// A listener on each transport, best first.
std::vector<PeerLinks::Endpoint> listenOn(const std::vector<std::string>& names, const transport::TransportOptions& options) {
  std::vector<PeerLinks::Endpoint> endpoints;
  for (const std::string& name : names) {
    PeerLinks::Endpoint e{transport::createTransport(name, options), nullptr};
    e.listener = e.transport->listen();
    endpoints.push_back(std::move(e));
  }
  return endpoints;
}

std::string listenerAddresses(const std::vector<PeerLinks::Endpoint>& endpoints) {
  static const std::string host = topology::thisHostName();
  transport::ListenerAddresses listeners{host, {}};
  for (const PeerLinks::Endpoint& e : endpoints) listeners.addresses.push_back(e.listener->address());
  return transport::encodeAddressList(listeners);
}

}  // namespace

// Every message of a collective carries a tag that hashes what the rank believes it is doing: the sequence
// number, the collective, count, type, op, root and algorithm. Ranks that disagree on any of them (a count
// that differs, collectives called in another order) fail with a tag mismatch instead of exchanging garbage.
uint32_t collectiveTag(uint32_t seq, const ScheduleSpec& spec, mscDataType_t type, mscRedOp_t op) {
  uint64_t fields[] = {seq, static_cast<uint64_t>(spec.collective), spec.count, static_cast<uint64_t>(type),
                       static_cast<uint64_t>(op), static_cast<uint64_t>(spec.root), static_cast<uint64_t>(spec.algorithm)};
  uint64_t h = 0x243f6a8885a308d3ULL;  // multiply-xorshift per field: a few cycles each, on the small-message path
  for (uint64_t f : fields) {
    h = (h ^ f) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
  }
  return static_cast<uint32_t>(h ^ (h >> 32)) & ~kPointToPointTag;
}

namespace {
// Reads a rank's shared-memory region identity, announced under `prefix` + rank.
std::function<node::RegionIdentity(int)> regionFinder(std::shared_ptr<Store> store, std::string prefix,
                                                      std::chrono::milliseconds timeout) {
  return [store, prefix, timeout](int peer) {
    std::string text = store->get(prefix + std::to_string(peer), timeout);
    node::RegionIdentity identity;
    if (!node::RegionIdentity::parse(text, &identity)) {
      throw Error(ErrorCode::kPeerLost, "the store holds a malformed shared-memory identity '" + text + "' for rank " +
                                            std::to_string(peer));
    }
    return identity;
  };
}
}  // namespace

static void validateRank(int rank, int nranks) {
  if (nranks < 1) throw Error(ErrorCode::kInvalidArgument, "comm init: nranks " + std::to_string(nranks) + " < 1");
  if (rank < 0 || rank >= nranks) {
    throw Error(ErrorCode::kInvalidArgument,
                "comm init: rank " + std::to_string(rank) + " out of range for " + std::to_string(nranks) + " ranks");
  }
}

std::shared_ptr<Communicator> Communicator::create(const UniqueId& id, int rank, int nranks,
                                                   CommunicatorOptions options) {
  validateRank(rank, nranks);  // before waiting for a store
  log::setRank(rank);
  std::string who = "rank " + std::to_string(rank);
  std::shared_ptr<Store> store = connectStore(id, who, options.timeout);
  if (options.transport_options.bind_address.empty() && config::getBool("MEGASCALE_RAILS")) {
    options.transport_options.bind_address = topology::railAddress(options.local_rank, topology::configuredInterfaceSpec());
  }
  if (options.transport_options.bind_address.empty()) {
    StoreAddress sa = parseStoreUrl(id.store_url);
    std::string local = localAddressToward(sa.host, sa.port);
    options.transport_options.bind_address = local == "0.0.0.0" ? "127.0.0.1" : local;
  }
  return createOnStore(std::move(store), id.secret, id.job_id, rank, nranks, std::move(options));
}

std::shared_ptr<Communicator> Communicator::createOnStore(std::shared_ptr<Store> store, const std::string& secret,
                                                         const std::string& job_label, int rank, int nranks,
                                                         CommunicatorOptions options) {
  validateRank(rank, nranks);
  log::setRank(rank);
  const int block = options.host_block;
  if (block < 0 || (block > 0 && (nranks % block != 0 || (options.local_size > 0 && options.local_size != block)))) {
    throw Error(ErrorCode::kInvalidArgument,
                "rank " + std::to_string(rank) + ": MEGASCALE_HOST_BLOCK=" + std::to_string(block) + " does not describe " +
                    std::to_string(nranks) + " ranks in hosts of " + std::to_string(options.local_size) +
                    " (it must divide the world and equal the local size)");
  }
  noteRanksOnHost(std::max(options.local_size, static_cast<int>(config::getInt("MEGASCALE_RANKS_SHARING_CORES"))));
  options.transport_options.secret = secret;
  // The rank's listeners are polled for as long as its communicators live (ListenerHub), so a connection may
  // start with one socket and add its stripes at its first large message.
  options.transport_options.tcp.lazy_stripes = true;
  options.node.timeout = options.timeout;
  if (options.transport_options.bind_address.empty()) options.transport_options.bind_address = "127.0.0.1";
  const bool all_local = options.local_size == nranks;
  std::vector<std::string> names = transport::communicatorTransports(options.transport, all_local);
  auto endpoints = listenOn(names, options.transport_options);
  // Shared-memory regions for the node engine: of all ranks when they share this host, else of this host's
  // ranks, as a stage of hierarchical schedules once the layout is known (setUpHostStage).
  std::unique_ptr<node::Region> region;
  if (sharesHostMemory(names) && options.node_engine && nranks > 1) region = node::Region::create(rank, options.node.slot_bytes);
  // Publishing is this rank's whole part of the job's start: one store call, no barrier, nothing read.
  std::vector<std::pair<std::string, std::string>> published{{AddressBook::keyOf(rank), listenerAddresses(endpoints)}};
  if (region) published.emplace_back("world/node/" + std::to_string(rank), region->identity().toString());
  store->multiSet(published);
  auto book = std::make_shared<AddressBook>(store, options.timeout);
  auto links = std::make_unique<PeerLinks>(std::move(endpoints), rank, [book](int peer) { return book->lookup(peer); });
  links->setPrefetch([book](const std::vector<int>& peers) { book->prefetch(peers); });
  auto find_region = regionFinder(store, "world/node/", options.timeout);
  auto comm = std::shared_ptr<Communicator>(
      new Communicator(rank, nranks, std::move(options), std::move(links), std::move(names)));
  comm->pending_region_ = std::move(region);  // before any task reaches the worker
  comm->region_of_ = find_region;
  comm->store_ = store;
  comm->world_rank_of_ = [](int r) { return r; };
  if (all_local || block > 0) {  // one host, or the launcher's placement: the layout without an exchange
    comm->layout_ = all_local ? HostLayout::sharedBlocks(1, nranks) : HostLayout::sharedBlocks(nranks / block, block);
    comm->agreed_links_.network = comm->options_.link_costs.network;
    comm->layout_at_creation_ = true;
    comm->setUpHostStage(std::move(comm->pending_region_), find_region);
  }
  flight::Recorder::process().setWorldRank(rank);
  comm->startRecording();
  MSC_LOG_INFO("joined job %s as rank %d of %d over %s%s", job_label.c_str(), rank, nranks,
               comm->transportName().c_str(), comm->servesWholeHost() ? " (shared-memory collectives)" : "");
  return comm;
}

Communicator::Communicator(int rank, int nranks, CommunicatorOptions options, std::unique_ptr<PeerLinks> links,
                           std::vector<std::string> transport_names)
    : rank_(rank),
      nranks_(nranks),
      options_(std::move(options)),
      links_(std::move(links)),
      transport_names_(std::move(transport_names)) {
  agreed_links_ = options_.link_costs;
  shares_host_memory_ = sharesHostMemory(transport_names_);
  links_->setAbortFlag(&aborted_);
  registry_ = std::make_unique<BufferRegistry>(rank_, links_->transports());
  scratch_.registry = registry_.get();
}

void Communicator::startWorkerLocked() {
  if (worker_.joinable()) return;
  wake_fd_ = Fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd_.valid()) throw Error(ErrorCode::kSystem, "rank " + std::to_string(rank_) + ": eventfd failed: " + errnoText(errno));
  worker_ = std::jthread([this](std::stop_token stop) { workerLoop(stop); });
}

Communicator::~Communicator() {
  {
    std::unique_lock<std::mutex> lock(queue_mutex_);
    idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
  }
  if (engine_ != nullptr) engine_->remove(&engine_side_);  // it is out of our tasks when this returns
  if (listens_while_idle_) links_->hub()->releaseWatch();  // the next of the rank's communicators to run takes over
  worker_.request_stop();
  queue_cv_.notify_all();
  if (wake_fd_.valid()) signalEventFd(wake_fd_.get());
}

void Communicator::validate(const char* op, const void* in, const void* out, size_t count, mscDataType_t type,
                            mscRedOp_t op_id, int root, bool needs_op, bool needs_root) const {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, std::string(op) + ": rank " + std::to_string(rank_) + ": " + why);
  };
  if (!validDtype(type)) throw bad("unknown datatype " + std::to_string(static_cast<int>(type)));
  if (needs_op && !validOp(op_id)) throw bad("unknown reduction op " + std::to_string(static_cast<int>(op_id)));
  if (needs_root && (root < 0 || root >= nranks_)) {
    throw bad("root " + std::to_string(root) + " out of range for " + std::to_string(nranks_) + " ranks");
  }
  size_t es = dtypeSize(type);
  if (count > SIZE_MAX / es / static_cast<size_t>(nranks_)) throw bad("count " + std::to_string(count) + " overflows");
  if (count > 0 && (in == nullptr || out == nullptr)) throw bad("null buffer with count " + std::to_string(count));
}

std::shared_ptr<Work> Communicator::submitCollective(Collective c, const void* in, void* out, size_t count,
                                                     mscDataType_t type, mscRedOp_t op, int root) {
  bool reduction = reduces(c);
  bool rooted = c == Collective::kBroadcast || c == Collective::kReduce;
  validate(collectiveName(c), in, out, count, type, op, root, reduction, rooted);
  ScheduleSpec spec{c, Algorithm::kAuto, count, rank_, nranks_, root, false};
  size_t es = dtypeSize(type);
  // NCCL's in-place conventions.
  const uint8_t* in_bytes = static_cast<const uint8_t*>(in);
  uint8_t* out_bytes = static_cast<uint8_t*>(out);
  if (c == Collective::kAllGather) spec.in_place = in_bytes == out_bytes + count * es * rank_;
  else if (c == Collective::kReduceScatter) spec.in_place = out_bytes == in_bytes + count * es * rank_;
  else spec.in_place = in_bytes == out_bytes;
  spec.algorithm = options_.algorithms.of(c);  // a request; kAuto is chosen when the operation starts
  Task task;
  task.spec = spec;
  task.in = in;
  task.out = out;
  task.type = type;
  task.op = reduction ? op : mscSum;
  task.on_device = memory::onDevice({in, out});
  return enqueue(std::move(task));
}

std::shared_ptr<Work> Communicator::allReduce(const void* in, void* out, size_t count, mscDataType_t type, mscRedOp_t op) {
  return submitCollective(Collective::kAllReduce, in, out, count, type, op, 0);
}
std::shared_ptr<Work> Communicator::allGather(const void* in, void* out, size_t count, mscDataType_t type) {
  return submitCollective(Collective::kAllGather, in, out, count, type, mscSum, 0);
}
std::shared_ptr<Work> Communicator::reduceScatter(const void* in, void* out, size_t count, mscDataType_t type,
                                                  mscRedOp_t op) {
  return submitCollective(Collective::kReduceScatter, in, out, count, type, op, 0);
}
std::shared_ptr<Work> Communicator::broadcast(const void* in, void* out, size_t count, mscDataType_t type, int root) {
  return submitCollective(Collective::kBroadcast, rank_ == root ? in : out, out, count, type, mscSum, root);
}
std::shared_ptr<Work> Communicator::reduce(const void* in, void* out, size_t count, mscDataType_t type, mscRedOp_t op,
                                           int root) {
  // Only the root's output is significant; others may pass null.
  static uint8_t unused;
  return submitCollective(Collective::kReduce, in, rank_ == root ? out : (out ? out : &unused), count, type, op, root);
}
std::shared_ptr<Work> Communicator::allToAll(const void* in, void* out, size_t count, mscDataType_t type) {
  return submitCollective(Collective::kAllToAll, in, out, count, type, mscSum, 0);
}
std::shared_ptr<Work> Communicator::barrier() {
  static uint8_t unused;
  return submitCollective(Collective::kBarrier, &unused, &unused, 0, mscUint8, mscSum, 0);
}

std::shared_ptr<Work> Communicator::pointToPoint(const std::vector<PointToPoint>& ops) {
  for (const PointToPoint& p : ops) {
    const char* what = p.is_send ? "send" : "recv";
    validate(what, p.buffer, p.buffer, p.count, p.type, mscSum, p.peer, false, true);
    if (p.peer == rank_) {
      throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": rank " + std::to_string(rank_) +
                                                   ": peer is this rank (use a local copy)");
    }
  }
  Task task;
  task.spec = ScheduleSpec{Collective::kSendRecv, Algorithm::kAuto, 0, rank_, nranks_, 0, false};
  task.type = mscUint8;
  task.op = mscSum;
  task.p2p = ops;
  return enqueue(std::move(task));
}

Schedule Communicator::pointToPointSchedule(const Task& task) const {
  Schedule s;
  Phase phase;
  Slice to_self{};  // a transfer to this rank, until the one from it arrives: then a local copy, first
  for (size_t i = 0; i < task.p2p.size(); ++i) {
    const PointToPoint& p = task.p2p[i];
    Slice slice{static_cast<uint16_t>(kUser + i), 0, p.count * dtypeSize(p.type)};
    if (p.peer == rank_) {
      if (p.is_send) to_self = slice;
      else s.phases.push_back(Phase{{}, {Step{Step::kCopy, -1, to_self, {}, slice}}});
      continue;
    }
    phase.comm.push_back(p.is_send ? Step{Step::kSend, p.peer, slice, {}, {}} : Step{Step::kRecv, p.peer, {}, {}, slice});
  }
  s.phases.push_back(std::move(phase));
  return s;
}

std::string Communicator::transportName() const {
  std::string joined;
  for (const std::string& name : transport_names_) joined += (joined.empty() ? "" : "+") + name;
  return joined;
}

std::string Communicator::description() const {
  std::string text = "transport: ";
  text += transportName();
  text += " algorithm: ";
  text += options_.algorithms.text;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    text += host_stage_ || pending_region_ ? " node-engine: on" : " node-engine: off";
    if (host_stage_) text += " host-stage: " + host_stage_->describeHost();
  }
  const std::string peers = links_->peersByTransport();
  if (!peers.empty()) text += " peers: " + peers;
  return text;
}

void Communicator::reportOutcome(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kOk:
      return heartbeat::reportFinished(heartbeat::Outcome::kOk);
    case ErrorCode::kPeerLost:
    case ErrorCode::kSystem:
    case ErrorCode::kTimeout:
      return heartbeat::reportFinished(heartbeat::Outcome::kTransportError);
    default:
      return heartbeat::reportFinished(heartbeat::Outcome::kOtherError);
  }
}

void Communicator::setName(std::string_view name) {
  packed_name_ = heartbeat::packName(name);
  flight_.setName(packed_name_);
}

std::string Communicator::scope() const {
  std::string text = "group " + name() + " of " + std::to_string(nranks_) + ": world ranks ";
  const auto member = [&](int i) { return std::to_string(world_rank_of_(i)); };
  constexpr int kListed = 8;
  if (nranks_ <= kListed) {
    for (int i = 0; i < nranks_; ++i) text += (i > 0 ? ", " : "") + member(i);
  } else {
    for (int i = 0; i < kListed / 2; ++i) text += member(i) + ", ";
    text += "..., " + member(nranks_ - 1);
  }
  const std::string coordinates = flight::Recorder::process().coordinates();
  if (!coordinates.empty()) text += "; this rank: " + coordinates;
  return text;
}

void Communicator::startRecording() {
  if (!options_.flight_recorder) return;
  flight::Recorder& recorder = flight::Recorder::process();
  flight_.attach(recorder, recorder.claim(packed_name_, rank_, nranks_, world_rank_of_));
}

void Communicator::recordIssued(Task& task, uint32_t seq) {
  const bool rooted = task.spec.collective == Collective::kBroadcast || task.spec.collective == Collective::kReduce;
  flight::GroupLog::Issue issue{task.spec.collective, task.type,      task.op, task.spec.algorithm,
                                rooted ? task.spec.root : -1, task.spec.count, seq};
  if (task.spec.collective == Collective::kSendRecv && !task.p2p.empty()) {
    issue.dtype = task.p2p.front().type;
    issue.count = task.p2p.front().count;
    issue.peer_count = static_cast<int>(task.p2p.size());
    for (const PointToPoint& p : task.p2p) {
      int& peer = p.is_send ? issue.send_peer : issue.recv_peer;
      if (peer < 0) peer = p.peer;
    }
  }
  task.record = flight_.issued(issue);
}

void Communicator::recordFinished(const Task& task, const Status& status) {
  flight_.finished(task.record, status.code());
  if (status.code() == ErrorCode::kTimeout) {
    flight::Recorder::process().dumpAfterTimeout(task.describe() + " of " + name());
  }
}

std::string Communicator::name() const { return heartbeat::unpackName(packed_name_); }

std::string Communicator::Task::describe() const {
  if (spec.collective == Collective::kSendRecv) return std::string(p2p_name) + " group of " + std::to_string(p2p.size());
  Collective c = spec.collective;
  bool reduction = reduces(c);
  return std::string(collectiveName(c)) + " (" + std::to_string(spec.count) + " x " + dtypeName(type) +
         (reduction ? std::string(" ") + opName(op) : "") + ", " + algorithmName(spec.algorithm) + ") #" +
         std::to_string(seq);
}

std::shared_ptr<Work> Communicator::enqueue(Task task) {
  task.work = std::make_shared<Work>();
  std::shared_ptr<Work> work = task.work;
  std::unique_lock<std::mutex> lock(queue_mutex_);
  if (!broken_.isOk()) {
    Status broken = brokenBy(task, broken_);
    recordIssued(task, next_sequence_);
    lock.unlock();
    flight_.finished(task.record, broken.code());
    heartbeat::reportIssued(packed_name_, task.seq, static_cast<uint32_t>(task.spec.collective));
    reportOutcome(broken);
    work->finish(broken);
    return work;
  }
  if (task.spec.collective == Collective::kSendRecv) {
    task.tag = kPointToPointTag;  // only the pair takes part, so no communicator-wide sequence applies
  } else {
    task.seq = next_sequence_++;
    task.tag = collectiveTag(task.seq, task.spec, task.type, task.op);
  }
  recordIssued(task, task.seq);
  heartbeat::reportIssued(packed_name_, task.seq, static_cast<uint32_t>(task.spec.collective));
  // Small collectives of a one-host communicator's node engine start right here when nothing is ahead of them:
  // handing them to the worker and waking the caller again would cost more than the operation.
  size_t payload = task.spec.count * dtypeSize(task.type) *
                   (task.spec.collective == Collective::kAllReduce ? 1 : static_cast<size_t>(nranks_));
  if (servesWholeHost() && someRowServesWholeHost(task.spec.collective) && payload <= options_.inline_bytes &&
      queue_.empty() && running_ == 0) {
    ++running_;
    lock.unlock();
    bool done = false;
    Status status = guarded(task, [&] { return beginHere(task, &done); });
    if (done || !status.isOk()) {
      finishTask(task, status);
      return work;
    }
    // Peers are slow, or it is not the engine's alone: the worker runs it, ahead of anything issued later.
    lock.lock();
    startWorkerLocked();
    queue_.push_front(std::move(task));
    --running_;
    wakeWorker(lock);
    return work;
  }
  dispatch(std::move(task), lock);
  return work;
}

void Communicator::wakeWorker(std::unique_lock<std::mutex>& lock) {
  const bool idle = worker_idle_;
  lock.unlock();
  queue_cv_.notify_all();
  if (idle) signalEventFd(wake_fd_.get());
}

void Communicator::idleWait() {
  // The shared listeners' descriptors: a peer connecting to any of this rank's groups wakes us, so its handshake
  // never waits for our next operation, and an idle rank costs no timer wake-ups.
  std::vector<pollfd> fds{pollfd{wake_fd_.get(), POLLIN, 0}};
  const bool complete = links_->appendIncomingReadiness(fds);
  (void)::poll(fds.data(), fds.size(), complete ? 1000 : 10);
  if (fds[0].revents & POLLIN) drainEventFd(wake_fd_.get());
}

void Communicator::workerLoop(std::stop_token stop) {
  while (true) {
    Task task;
    Status broken;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      // While idle, keep answering peers that connect to us, so they are not held up by our idleness.
      // A task waits while a caller runs one inline (running_ > 0), so tasks still run one at a time.
      while (queue_.empty() || running_ > 0) {
        if (stop.stop_requested()) return;
        if (!broken_.isOk() || running_ > 0) {
          queue_cv_.wait_for(lock, stop, std::chrono::milliseconds(10), [&] { return !queue_.empty() && running_ == 0; });
          continue;
        }
        worker_idle_ = true;
        lock.unlock();
        Status s = links_->pollIncoming();
        if (!s.isOk()) MSC_LOG_DEBUG("while idle: %s", s.message().c_str());
        idleWait();
        lock.lock();
        worker_idle_ = false;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
      broken = broken_;
    }
    execute(task, broken);
  }
}

void Communicator::execute(Task& task, Status broken) {
  finishTask(task, broken.isOk() ? guarded(task, [&] { return run(task); }) : brokenBy(task, broken));
}

// The small-message path: the operation's schedule, chosen and built as the worker would, and when it is the
// node engine's collective alone, its start on this thread. *done false: the worker runs the schedule (and
// finishes the engine call begun here).
Status Communicator::beginHere(Task& task, bool* done) {
  *done = false;
  const Schedule* lone = nullptr;
  MSC_RETURN_IF_ERROR(loneHostSchedule(task, &lone));
  return lone == nullptr ? Status::ok() : loneHostStep(task, *lone).begin(done);
}

Status Communicator::loneHostSchedule(Task& task, const Schedule** schedule) {
  *schedule = nullptr;
  if (task.on_device || !servesWholeHost() || !someRowServesWholeHost(task.spec.collective)) return Status::ok();
  MSC_RETURN_IF_ERROR(resolveAlgorithm(task));
  const ScheduleSpec& spec = task.spec;
  const bool cached = lone_cache_ && lone_cache_->collective == spec.collective &&
                      lone_cache_->algorithm == spec.algorithm && lone_cache_->count == spec.count &&
                      lone_cache_->in_place == spec.in_place;
  if (!cached) {
    const algorithms::AlgorithmRow* row = algorithms::rowOf(spec.algorithm);
    if (row == nullptr || !row->servesWholeHost(spec.collective)) return Status::ok();
    Schedule built = buildSchedule(spec);
    if (!isLoneHostStep(built)) return Status::ok();
    lone_cache_ = LoneSchedule{spec.collective, spec.algorithm, spec.count, spec.in_place, std::move(built)};
  }
  if (!task.started) flight_.started(task.record, static_cast<uint8_t>(spec.algorithm));
  task.started = true;
  *schedule = &lone_cache_->schedule;
  return Status::ok();
}

LoneHostStep Communicator::loneHostStep(Task& task, const Schedule& schedule) {
  return LoneHostStep{schedule, task.in,  task.out, task.type, task.op, task.tag, nranks_, *host_stage_,
                      [&task] { return task.describe(); }};
}

Status Communicator::guarded(const Task& task, const std::function<Status()>& body) {
  Status status;
  try {
    status = body();
  } catch (const Error& e) {
    status = Status(e.code(), task.describe() + ": rank " + std::to_string(rank_) + ": " + e.what());
  } catch (const std::exception& e) {
    status = Status(ErrorCode::kInternal, task.describe() + ": rank " + std::to_string(rank_) + ": " + e.what());
  }
  if (!status.isOk()) {
    status = Status(status.code(), status.message() + " [" + scope() + "]");
    MSC_LOG_WARN("%s", status.message().c_str());
    links_->closeAll();  // peers blocked on us fail now rather than at their timeout
  }
  return status;
}

Status Communicator::brokenBy(const Task& task, const Status& broken) const {
  return Status(ErrorCode::kAborted, task.describe() + ": rank " + std::to_string(rank_) +
                                         ": communicator is broken by an earlier error: " + broken.message());
}

void Communicator::finishTask(Task& task, const Status& status) {
  if (!status.isOk()) {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    if (broken_.isOk()) broken_ = status;
  }
  reportOutcome(status);
  recordFinished(task, status);
  task.work->finish(status);
  bool idle;
  {
    std::lock_guard<std::mutex> lock(queue_mutex_);
    --running_;
    idle = queue_.empty();
  }
  // Waiters for idleness wake once, when the queue drains, not after every operation: on oversubscribed
  // cores a wake-up per operation costs more than the operation. Otherwise the worker may have tasks that
  // queued behind an inline one.
  if (idle) {
    idle_cv_.notify_all();
  } else {
    queue_cv_.notify_all();
  }
}

Status Communicator::run(Task& task) {
  const Schedule* lone = nullptr;
  MSC_RETURN_IF_ERROR(loneHostSchedule(task, &lone));
  if (lone != nullptr) return loneHostStep(task, *lone).runToEnd();
  PreparedRun prepared;
  MSC_RETURN_IF_ERROR(prepareRun(task, false, &prepared));
  return runToEnd(*prepared.run);
}

Status Communicator::prepareRun(Task& task, bool shared_driver, PreparedRun* out) {
  if (task.spec.collective != Collective::kSendRecv) MSC_RETURN_IF_ERROR(resolveAlgorithm(task));
  if (!task.started) flight_.started(task.record, static_cast<uint8_t>(task.spec.algorithm));
  ExecutionContext ctx;
  ctx.waiting_for = flight_.waitingFor(task.record);
  ctx.rank = rank_;
  ctx.operation = task.describe();
  ctx.tag = task.tag;
  ctx.timeout = options_.timeout;
  ctx.aborted = &aborted_;
  ctx.nranks_for_average = nranks_;
  ctx.scratch = &scratch_;
  ctx.host = host_stage_.get();
  ctx.shared_driver = shared_driver;
  ctx.queues = &queues_;
  ctx.staging = options_.staging;
  if (task.spec.collective == Collective::kSendRecv) {
    std::vector<void*> buffers = {nullptr, nullptr, nullptr};
    for (const PointToPoint& p : task.p2p) buffers.push_back(p.buffer);
    out->schedule = pointToPointSchedule(task);
    out->run = std::make_unique<ScheduleRun>(out->schedule, std::move(buffers), mscUint8, mscSum, *links_, std::move(ctx));
    return Status::ok();
  }
  out->schedule = buildSchedule(task.spec);
  ctx.host_buffers = !task.on_device;
  out->run = std::make_unique<ScheduleRun>(out->schedule, std::vector<void*>{const_cast<void*>(task.in), task.out},
                                           task.type, task.op, *links_, std::move(ctx));
  return Status::ok();
}

// The one decision per operation (algorithm_choice.h), with the host layout where the choice or the schedule
// depends on it.
Status Communicator::resolveAlgorithm(Task& task) {
  if (task.resolved) return Status::ok();  // a one-host task asks first for its lone schedule, then for its run
  const bool choose = task.spec.algorithm == Algorithm::kAuto;
  if (needsHostLayout(task)) MSC_RETURN_IF_ERROR(ensureHostLayout());
  task.resolved = true;
  if (!choose && task.spec.algorithm != Algorithm::kHierarchical) return Status::ok();
  task.spec.hosts = layout_.get();
  task.spec.host_steps = host_stage_ != nullptr && !task.on_device;
  if (!choose) return Status::ok();
  // Ranks of one host meet through a network transport when none of this rank's transports shares memory
  // (MEGASCALE_TRANSPORT=tcp): the chooser prices their link as the network's. Only the choice reads the links.
  LinkCosts priced = agreed_links_;
  if (!shares_host_memory_) priced.local = priced.network;
  task.spec.links = &priced;
  task.spec.algorithm = chooseAlgorithm(task.spec, dtypeSize(task.type));
  task.spec.links = nullptr;
  task.tag = collectiveTag(task.seq, task.spec, task.type, task.op);
  return Status::ok();
}

Status Communicator::ensureHostLayout() {
  if (layout_) return Status::ok();
  if (options_.local_size == nranks_) {
    layout_ = HostLayout::sharedBlocks(1, nranks_);
    return Status::ok();
  }
  std::unique_ptr<LayoutExchange> exchange = startLayoutExchange(false);
  MSC_RETURN_IF_ERROR(runToEnd(*exchange->run));
  finishLayoutExchange(*exchange);
  return Status::ok();
}

bool Communicator::needsHostLayout(const Task& task) const {
  const Algorithm a = task.spec.algorithm;
  return task.spec.collective != Collective::kSendRecv &&
         ((a == Algorithm::kAuto && choiceNeedsHostLayout(task.spec.collective)) || a == Algorithm::kHierarchical);
}

bool Communicator::needsLayoutExchange(const Task& task) const {
  return needsHostLayout(task) && !layout_ && options_.local_size != nranks_;
}

std::unique_ptr<Communicator::LayoutExchange> Communicator::startLayoutExchange(bool shared_driver) {
  // Every rank reaches this at the same point of its stream (the first collective that needs the layout),
  // so a fixed tag outside the sequence numbers' range is enough to keep it apart.
  // Each rank's host and network link, in one all-gather: the layout, and the link every rank assumes.
  auto exchange = std::make_unique<LayoutExchange>();
  exchange->mine = HostReport{hostKey(), LinkReport::of(options_.link_costs.network)};
  exchange->reports.resize(static_cast<size_t>(nranks_));
  const ScheduleSpec spec{Collective::kAllGather, Algorithm::kRing, sizeof(HostReport), rank_, nranks_, 0, false};
  ExecutionContext ctx;
  ctx.rank = rank_;
  ctx.operation = "exchanging host identities";
  ctx.tag = collectiveTag(0xffffffffu, spec, mscUint8, mscSum);
  ctx.timeout = options_.timeout;
  ctx.aborted = &aborted_;
  ctx.shared_driver = shared_driver;
  exchange->schedule = buildSchedule(spec);
  exchange->run = std::make_unique<ScheduleRun>(exchange->schedule,
                                                std::vector<void*>{&exchange->mine, exchange->reports.data()}, mscUint8,
                                                mscSum, *links_, std::move(ctx));
  return exchange;
}

void Communicator::finishLayoutExchange(const LayoutExchange& exchange) {
  std::vector<uint64_t> keys;
  std::vector<LinkReport> networks;
  for (const HostReport& r : exchange.reports) {
    keys.push_back(r.host_key);
    networks.push_back(r.network);
  }
  agreed_links_.network = agreedNetwork(networks);
  layout_ = std::make_unique<HostLayout>(HostLayout::fromKeys(keys));
  setUpHostStage(std::move(pending_region_), region_of_);
}

void Communicator::setUpHostStage(std::unique_ptr<node::Region> region,
                                  const std::function<node::RegionIdentity(int)>& region_of) {
  if (!region || !layout_) return;
  const std::vector<int>& host_ranks = layout_->ranks_of[static_cast<size_t>(layout_->host_of[static_cast<size_t>(rank_)])];
  if (host_ranks.size() < 2) return;
  const int local = layout_->local_of[static_cast<size_t>(rank_)];
  auto engine = std::make_unique<node::NodeEngine>(local, static_cast<int>(host_ranks.size()), options_.node,
                                                   std::move(region),
                                                   [host_ranks, region_of](int q) { return region_of(host_ranks[static_cast<size_t>(q)]); });
  engine->nameRanks([host_ranks, host = topology::thisHostName()](int q) {
    return "rank " + std::to_string(host_ranks[static_cast<size_t>(q)]) + " on host " + host;
  });
  auto stage = std::make_unique<HostStage>(std::move(engine), host_ranks, local);
  std::lock_guard<std::mutex> lock(queue_mutex_);
  host_stage_ = std::move(stage);
}

namespace {
Error badSplit(int rank, const std::string& why) {
  return Error(ErrorCode::kInvalidArgument, "split: rank " + std::to_string(rank) + ": " + why);
}

void checkTrafficClass(int rank, int traffic_class) {
  if (traffic_class < -1 || traffic_class > 255) {
    throw badSplit(rank, "traffic class " + std::to_string(traffic_class) + " must be a TOS byte (0-255) or -1 for the parent's");
  }
}
}  // namespace

Communicator::ChildLinks Communicator::nextChild(const SplitOptions& options) {
  ChildLinks child{children_.fetch_add(1), {}, options_.transport_options.traffic_class};
  if (options.traffic_class < 0 || options.traffic_class == options_.transport_options.traffic_class) {
    child.transports = links_->transports();
  } else {
    child.traffic_class = options.traffic_class;
    // Its own transports, so its connections carry its traffic class (both ends: the hello names it).
    transport::TransportOptions topts = options_.transport_options;
    topts.traffic_class = options.traffic_class;
    for (const std::string& name : transport_names_) child.transports.push_back(transport::createTransport(name, topts));
  }
  return child;
}

std::shared_ptr<Communicator> Communicator::split(int color, int key, const SplitOptions& options) {
  if (color < MSC_SPLIT_NOCOLOR) throw badSplit(rank_, "color " + std::to_string(color) + " must be >= 0 or MSC_SPLIT_NOCOLOR");
  checkTrafficClass(rank_, options.traffic_class);
  // Each rank contributes (color, key, its host) in one all-gather over the parent. A child of a shared-memory
  // communicator gets its own shared region, announced in the same exchange.
  struct Entry {
    int32_t color;
    int32_t key;
    node::RegionIdentity region;
    uint64_t host_key;  // the child's host layout and network link, with no exchange of their own
    LinkReport network;
  };
  ChildLinks child_links = nextChild(options);
  std::unique_ptr<node::Region> region;
  if (shares_host_memory_ && options_.node_engine && color != MSC_SPLIT_NOCOLOR) region = node::Region::create(-1, options_.node.slot_bytes);
  Entry mine{color, key, {}, hostKey(), LinkReport::of(options_.link_costs.network)};
  if (region) mine.region = region->identity();
  std::vector<Entry> all(nranks_);
  Status s = allGather(&mine, all.data(), sizeof(Entry), mscUint8)->wait(options_.timeout + std::chrono::seconds(5));
  if (!s.isOk()) throw Error(s.code(), "split: rank " + std::to_string(rank_) + ": exchanging colors failed: " + s.message());
  if (color == MSC_SPLIT_NOCOLOR) return nullptr;
  std::vector<int> members;
  for (int r = 0; r < nranks_; ++r) {
    if (all[r].color == color) members.push_back(r);
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[a].key < all[b].key; });
  int new_rank = static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  std::vector<node::RegionIdentity> regions;
  std::vector<uint64_t> host_keys;
  std::vector<LinkReport> networks;
  for (int r : members) {
    host_keys.push_back(all[r].host_key);
    networks.push_back(all[r].network);
    regions.push_back(all[r].region);
  }
  const int new_size = static_cast<int>(members.size());
  auto comm = makeChild(child_links, new_rank, new_size, [members](int peer) { return members.at(static_cast<size_t>(peer)); });
  // The child's node engine serves its ranks on this host: all of them when they share one host.
  auto layout = std::make_unique<HostLayout>(HostLayout::fromKeys(host_keys));
  const auto region_of = [regions](int peer) { return regions.at(static_cast<size_t>(peer)); };
  comm->layout_ = std::move(layout);  // before any task reaches its worker
  comm->layout_at_creation_ = true;
  comm->agreed_links_.network = agreedNetwork(networks);
  comm->setUpHostStage(std::move(region), region_of);
  return comm;
}

std::shared_ptr<Communicator> Communicator::splitStrided(const RankStride& group, const SplitOptions& options) {
  checkTrafficClass(rank_, options.traffic_class);
  if (group.count < 0 || group.count > nranks_) {
    throw badSplit(rank_, "a group of " + std::to_string(group.count) + " ranks in a communicator of " + std::to_string(nranks_));
  }
  const int64_t last = int64_t{group.first} + int64_t{group.stride} * (group.count - 1);
  if (group.count > 0 && (group.first < 0 || group.first >= nranks_ || last < 0 || last >= nranks_ ||
                          (group.count > 1 && group.stride == 0))) {
    throw badSplit(rank_, "ranks " + std::to_string(group.first) + " + i x " + std::to_string(group.stride) + " for i < " +
                              std::to_string(group.count) + " do not lie in 0.." + std::to_string(nranks_ - 1));
  }
  // This rank's place in the group, or -1 (a group of one may have any stride, 0 included).
  const int64_t offset = int64_t{rank_} - group.first;
  int64_t place = -1;
  if (group.count == 1) place = offset == 0 ? 0 : -1;
  else if (group.count > 1 && offset % group.stride == 0) place = offset / group.stride;
  if (group.count > 0 && (place < 0 || place >= group.count)) throw badSplit(rank_, "the group it names does not include it");
  ChildLinks child_links = nextChild(options);  // non-members count too, so every rank numbers splits alike
  if (group.count == 0) return nullptr;
  const int new_rank = static_cast<int>(place);
  auto comm = makeChild(child_links, new_rank, group.count,
                        [group](int peer) { return group.first + peer * group.stride; });
  if (layout_at_creation_) {  // fixed since this communicator's creation: the child's follows with no exchange
    comm->layout_ = std::make_unique<HostLayout>(
        HostLayout::ofMembers(*layout_, [group](int i) { return group.first + i * group.stride; }, group.count));
    comm->agreed_links_ = agreed_links_;
    comm->layout_at_creation_ = true;
  }
  const bool all_local = options_.local_size == nranks_ || (comm->layout_ && comm->layout_->hosts() == 1);
  comm->options_.local_size = all_local ? group.count : -1;  // else its layout is exchanged at first need
  comm->options_.local_rank = all_local ? new_rank : -1;
  if (all_local && !comm->layout_) {
    comm->layout_ = HostLayout::sharedBlocks(1, group.count);
    comm->layout_at_creation_ = true;
  }
  if (shares_host_memory_ && options_.node_engine && group.count > 1) {
    auto region = node::Region::create(-1, options_.node.slot_bytes);
    char group_hex[9];
    std::snprintf(group_hex, sizeof(group_hex), "%08x", comm->links_->group());
    const std::string prefix = "group/" + std::string(group_hex) + "/node/";
    store_->set(prefix + std::to_string(new_rank), region->identity().toString());
    auto find_region = regionFinder(store_, prefix, options_.timeout);
    if (comm->layout_) {
      comm->setUpHostStage(std::move(region), find_region);
    } else {
      comm->pending_region_ = std::move(region);
    }
    comm->region_of_ = find_region;
  }
  return comm;
}

std::shared_ptr<Communicator> Communicator::makeChild(const ChildLinks& child_links, int new_rank, int new_size,
                                                      std::function<int(int)> parent_rank_of) {
  // The same id on every member: the parent's group, how many splits it made before, and the world rank of
  // the child's first member (sibling groups of one split have distinct members), hashed; 0 is the world's.
  // It tells the group's connections apart on the shared listeners and names its keys in the store.
  const auto parent_world_rank = world_rank_of_;
  const auto world_rank_of = [parent_world_rank, parent_rank_of](int r) { return parent_world_rank(parent_rank_of(r)); };
  uint64_t h = (uint64_t{links_->group()} << 32 | child_links.sequence) * 0x9e3779b97f4a7c15ULL;
  h ^= static_cast<uint64_t>(world_rank_of(0)) * 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 31;
  h *= 0x94d049bb133111ebULL;
  uint32_t group = static_cast<uint32_t>(h ^ (h >> 32));
  if (group == 0) group = 1;
  auto parent_lookup = links_->lookup();
  auto parent_prefetch = links_->prefetcher();
  auto lookup = [parent_lookup, parent_rank_of](int peer) { return parent_lookup(parent_rank_of(peer)); };
  auto links = std::make_unique<PeerLinks>(links_->hub(), group, child_links.transports, new_rank, lookup);
  if (parent_prefetch) {
    links->setPrefetch([parent_prefetch, parent_rank_of](const std::vector<int>& peers) {
      std::vector<int> mapped;
      mapped.reserve(peers.size());
      for (int p : peers) mapped.push_back(parent_rank_of(p));
      parent_prefetch(mapped);
    });
  }
  CommunicatorOptions child = options_;
  child.transport_options.traffic_class = child_links.traffic_class;  // its own splits inherit it
  auto comm = std::shared_ptr<Communicator>(new Communicator(new_rank, new_size, child, std::move(links), transport_names_));
  comm->store_ = store_;
  comm->world_rank_of_ = world_rank_of;
  comm->startRecording();
  comm->setName("split");
  return comm;
}

void Communicator::abort() {
  aborted_.store(true);
  std::lock_guard<std::mutex> lock(queue_mutex_);
  if (broken_.isOk()) broken_ = Status(ErrorCode::kAborted, "rank " + std::to_string(rank_) + ": communicator aborted");
  for (Task& t : queue_) {
    reportOutcome(Status(ErrorCode::kAborted, ""));
    flight_.finished(t.record, ErrorCode::kAborted);
    t.work->finish(Status(ErrorCode::kAborted, t.describe() + ": communicator aborted"));
  }
  queue_.clear();
  if (host_stage_) host_stage_->cancel();
  idle_cv_.notify_all();
}

Status Communicator::asyncError() const {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  return broken_;
}

bool Communicator::busy() const {
  std::lock_guard<std::mutex> lock(queue_mutex_);
  return !queue_.empty() || running_ > 0;
}

Status Communicator::synchronize() {
  std::unique_lock<std::mutex> lock(queue_mutex_);
  idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
  return broken_;
}

}  // namespace megascale
