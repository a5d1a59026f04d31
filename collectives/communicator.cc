#include "collectives/communicator.h"

#include <algorithm>
#include <cstring>

#include "collectives/bootstrap/local_address.h"
#include "collectives/bootstrap/store.h"
#include "collectives/dtype.h"
#include "collectives/executor.h"
#include "common/config.h"
#include "common/log.h"

namespace megascale {

CommunicatorOptions CommunicatorOptions::fromEnvironment() {
  config::warnUnknownVariablesOnce();
  CommunicatorOptions o;
  o.timeout = config::timeout();
  o.transport = config::getString("MEGASCALE_TRANSPORT");
  std::string algo = config::getString("MEGASCALE_ALGO");
  Algorithm a = Algorithm::kAuto;
  bool valid = parseAlgorithm(algo, &a) && (a == Algorithm::kAuto || a == Algorithm::kRing ||
                                             a == Algorithm::kRecursiveHalvingDoubling || a == Algorithm::kDirect);
  o.allreduce_algorithm = a;
  if (!valid) {
    throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_ALGO='" + algo + "': expected auto, ring, rhd or direct");
  }
  o.local_rank = static_cast<int>(config::getInt("MEGASCALE_LOCAL_RANK"));
  o.local_size = static_cast<int>(config::getInt("MEGASCALE_LOCAL_SIZE"));
  int64_t sockets = config::getInt("MEGASCALE_TCP_SOCKETS");
  if (sockets < 1 || sockets > 64) throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_TCP_SOCKETS must be 1..64");
  o.transport_options.sockets_per_comm = static_cast<int>(sockets);
  o.transport_options.stripe_min_bytes = static_cast<size_t>(config::getInt("MEGASCALE_TCP_STRIPE_MIN"));
  o.transport_options.shm_ring_bytes = static_cast<size_t>(config::getInt("MEGASCALE_SHM_RING_BYTES"));
  o.transport_options.bind_address = config::getString("MEGASCALE_TCP_IFADDR");
  o.transport_options.handshake_timeout_ms = static_cast<int>(o.timeout.count());
  return o;
}

std::string resolveTransportName(const std::string& requested, int nranks, int local_size) {
  if (requested != "auto") return requested;
  return local_size == nranks ? "shm" : "tcp";
}

// Every message of a collective carries a tag that hashes what the rank believes it is doing: the sequence
// number, the collective, count, type, op, root and algorithm. Ranks that disagree on any of them (a count
// that differs, collectives called in another order) fail with a tag mismatch instead of exchanging garbage.
uint32_t collectiveTag(uint32_t seq, const ScheduleSpec& spec, mscDataType_t type, mscRedOp_t op) {
  uint64_t fields[] = {seq, static_cast<uint64_t>(spec.collective), spec.count, static_cast<uint64_t>(type),
                       static_cast<uint64_t>(op), static_cast<uint64_t>(spec.root), static_cast<uint64_t>(spec.algorithm)};
  uint32_t h = 2166136261u;  // FNV-1a
  for (uint64_t f : fields) {
    for (int b = 0; b < 8; ++b) h = (h ^ static_cast<uint8_t>(f >> (8 * b))) * 16777619u;
  }
  return h & ~kPointToPointTag;
}

std::shared_ptr<Communicator> Communicator::create(const UniqueId& id, int rank, int nranks,
                                                   CommunicatorOptions options) {
  if (nranks < 1) throw Error(ErrorCode::kInvalidArgument, "comm init: nranks " + std::to_string(nranks) + " < 1");
  if (rank < 0 || rank >= nranks) {
    throw Error(ErrorCode::kInvalidArgument,
                "comm init: rank " + std::to_string(rank) + " out of range for " + std::to_string(nranks) + " ranks");
  }
  log::setRank(rank);
  std::string who = "rank " + std::to_string(rank);
  std::shared_ptr<Store> store = connectStore(id, who, options.timeout);
  options.transport_options.secret = id.secret;
  if (options.transport_options.bind_address.empty()) {
    StoreAddress sa = parseStoreUrl(id.store_url);
    std::string local = localAddressToward(sa.host, sa.port);
    options.transport_options.bind_address = local == "0.0.0.0" ? "127.0.0.1" : local;
  }
  std::string name = resolveTransportName(options.transport, nranks, options.local_size);
  auto transport = transport::createTransport(name, options.transport_options);
  auto listener = transport->listen();
  store->set("world/addr/" + std::to_string(rank), listener->address().asString());
  auto timeout = options.timeout;
  auto lookup = [store, timeout](int peer) {
    return transport::Address::fromString(store->get("world/addr/" + std::to_string(peer), timeout));
  };
  auto links = std::make_unique<PeerLinks>(std::move(transport), std::move(listener), rank, lookup);
  MSC_LOG_INFO("joined job %s as rank %d of %d over %s", id.job_id.c_str(), rank, nranks, name.c_str());
  return std::shared_ptr<Communicator>(new Communicator(rank, nranks, std::move(options), std::move(links), name));
}

Communicator::Communicator(int rank, int nranks, CommunicatorOptions options, std::unique_ptr<PeerLinks> links,
                           std::string transport_name)
    : rank_(rank),
      nranks_(nranks),
      options_(std::move(options)),
      links_(std::move(links)),
      transport_name_(std::move(transport_name)) {
  links_->setAbortFlag(&aborted_);
  worker_ = std::jthread([this](std::stop_token stop) { workerLoop(stop); });
}

Communicator::~Communicator() {
  {
    std::unique_lock<std::mutex> lock(queue_mutex_);
    idle_cv_.wait(lock, [&] { return queue_.empty() && running_ == 0; });
  }
  worker_.request_stop();
  queue_cv_.notify_all();
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
  bool reduction = c == Collective::kAllReduce || c == Collective::kReduceScatter || c == Collective::kReduce;
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
  if (c == Collective::kAllReduce) spec.algorithm = options_.allreduce_algorithm;
  spec.algorithm = chooseAlgorithm(spec, es);
  Task task;
  task.spec = spec;
  task.buffers = {const_cast<void*>(in), out};
  task.type = type;
  task.op = reduction ? op : mscSum;
  task.name = std::string(collectiveName(c)) + " (" + std::to_string(count) + " x " + dtypeName(type) +
              (reduction ? std::string(" ") + opName(op) : "") + ", " + algorithmName(spec.algorithm) + ")";
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
  task.name = "send/recv group of " + std::to_string(ops.size());
  return enqueue(std::move(task));
}

Schedule Communicator::pointToPointSchedule(const Task& task) const {
  Schedule s;
  Phase phase;
  for (size_t i = 0; i < task.p2p.size(); ++i) {
    const PointToPoint& p = task.p2p[i];
    Slice slice{static_cast<uint16_t>(kUser + i), 0, p.count * dtypeSize(p.type)};
    phase.comm.push_back(p.is_send ? Step{Step::kSend, p.peer, slice, {}, {}} : Step{Step::kRecv, p.peer, {}, {}, slice});
  }
  s.phases.push_back(std::move(phase));
  return s;
}

std::shared_ptr<Work> Communicator::enqueue(Task task) {
  task.work = std::make_shared<Work>();
  std::shared_ptr<Work> work = task.work;
  std::unique_lock<std::mutex> lock(queue_mutex_);
  if (!broken_.isOk()) {
    Status broken = Status(ErrorCode::kAborted, task.name + ": rank " + std::to_string(rank_) +
                                                    ": communicator is broken by an earlier error: " + broken_.message());
    lock.unlock();
    work->finish(broken);
    return work;
  }
  if (task.spec.collective == Collective::kSendRecv) {
    task.tag = kPointToPointTag;  // only the pair takes part, so no communicator-wide sequence applies
  } else {
    uint32_t seq = next_sequence_++;
    task.tag = collectiveTag(seq, task.spec, task.type, task.op);
    task.name += " #" + std::to_string(seq);
  }
  queue_.push_back(std::move(task));
  lock.unlock();
  queue_cv_.notify_all();
  return work;
}

void Communicator::workerLoop(std::stop_token stop) {
  while (true) {
    Task task;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      // While idle, keep answering peers that connect to us, so they are not held up by our idleness.
      while (!queue_cv_.wait_for(lock, stop, std::chrono::milliseconds(10), [&] { return !queue_.empty(); })) {
        if (stop.stop_requested()) return;
        if (!broken_.isOk()) continue;
        lock.unlock();
        Status s = links_->pollIncoming();
        if (!s.isOk()) MSC_LOG_DEBUG("while idle: %s", s.message().c_str());
        lock.lock();
      }
      task = std::move(queue_.front());
      queue_.pop_front();
      ++running_;
    }
    Status status;
    {
      std::unique_lock<std::mutex> lock(queue_mutex_);
      status = broken_;
    }
    if (status.isOk()) {
      try {
        status = run(task);
      } catch (const Error& e) {
        status = Status(e.code(), task.name + ": rank " + std::to_string(rank_) + ": " + e.what());
      } catch (const std::exception& e) {
        status = Status(ErrorCode::kInternal, task.name + ": rank " + std::to_string(rank_) + ": " + e.what());
      }
      if (!status.isOk()) {
        MSC_LOG_WARN("%s", status.message().c_str());
        links_->closeAll();  // peers blocked on us fail now rather than at their timeout
      }
    } else {
      status = Status(ErrorCode::kAborted, task.name + ": rank " + std::to_string(rank_) +
                                               ": communicator is broken by an earlier error: " + status.message());
    }
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      if (!status.isOk() && broken_.isOk()) broken_ = status;
    }
    task.work->finish(status);
    bool idle;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      --running_;
      idle = queue_.empty();
    }
    // Waiters for idleness wake once, when the queue drains, not after every operation: on oversubscribed
    // cores a wake-up per operation costs more than the operation.
    if (idle) idle_cv_.notify_all();
  }
}

Status Communicator::run(Task& task) {
  ExecutionContext ctx;
  ctx.rank = rank_;
  ctx.operation = task.name;
  ctx.tag = task.tag;
  ctx.timeout = options_.timeout;
  ctx.aborted = &aborted_;
  ctx.nranks_for_average = nranks_;
  if (task.spec.collective == Collective::kSendRecv) {
    std::vector<void*> buffers = {nullptr, nullptr, nullptr};
    for (const PointToPoint& p : task.p2p) buffers.push_back(p.buffer);
    return executeSchedule(pointToPointSchedule(task), buffers, mscUint8, mscSum, *links_, ctx);
  }
  Schedule schedule = buildSchedule(task.spec);
  return executeSchedule(schedule, task.buffers, task.type, task.op, *links_, ctx);
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) {
  if (color < MSC_SPLIT_NOCOLOR) {
    throw Error(ErrorCode::kInvalidArgument, "split: rank " + std::to_string(rank_) + ": color " +
                                                 std::to_string(color) + " must be >= 0 or MSC_SPLIT_NOCOLOR");
  }
  // Each rank contributes (color, key, its new listener's address) in one all-gather over the parent.
  struct Entry {
    int32_t color;
    int32_t key;
    uint32_t address_size;
    uint8_t address[transport::kMaxAddressBytes];
  };
  transport::TransportOptions topts = options_.transport_options;
  auto transport = transport::createTransport(transport_name_, topts);
  auto listener = transport->listen();
  Entry mine{color, key, static_cast<uint32_t>(listener->address().size), {}};
  std::memcpy(mine.address, listener->address().bytes, listener->address().size);
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
  std::vector<transport::Address> table;
  for (int r : members) {
    transport::Address a;
    a.size = std::min<size_t>(all[r].address_size, transport::kMaxAddressBytes);
    std::memcpy(a.bytes, all[r].address, a.size);
    table.push_back(a);
  }
  auto lookup = [table](int peer) { return table.at(static_cast<size_t>(peer)); };
  auto links = std::make_unique<PeerLinks>(std::move(transport), std::move(listener), new_rank, lookup);
  CommunicatorOptions child = options_;
  return std::shared_ptr<Communicator>(
      new Communicator(new_rank, static_cast<int>(members.size()), child, std::move(links), transport_name_));
}

void Communicator::abort() {
  aborted_.store(true);
  std::lock_guard<std::mutex> lock(queue_mutex_);
  if (broken_.isOk()) broken_ = Status(ErrorCode::kAborted, "rank " + std::to_string(rank_) + ": communicator aborted");
  for (Task& t : queue_) t.work->finish(Status(ErrorCode::kAborted, t.name + ": communicator aborted"));
  queue_.clear();
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
