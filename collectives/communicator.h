// A communicator: a group of ranks that run collectives together. Operations are queued and run in issue
// order (like a stream); each call returns a Work at once. A communicator that only talks over the network runs
// them on the process's progress engine (shared by all such communicators); one with a node engine or a host
// stage (shared memory, whose waits block) on a worker thread of its own.
// Invalid arguments throw Error(kInvalidArgument) from the call; failures while running finish the Work
// with an error and break the communicator, so every later operation fails fast instead of hanging.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store.h"
#include "bootstrap/unique_id.h"
#include "collectives/executor.h"
#include "collectives/flight_recorder.h"
#include "collectives/host_layout.h"
#include "collectives/node/node_engine.h"
#include "collectives/peer_links.h"
#include "collectives/progress_engine.h"
#include "collectives/schedule.h"
#include "collectives/work.h"
#include "megascale/megascale.h"
#include "transport/transport.h"
#include "collectives/algorithm_choice.h"
#include "collectives/cost_model.h"
#include "common/heartbeat.h"

namespace megascale {

struct CommunicatorOptions {
  std::chrono::milliseconds timeout{300000};  // MEGASCALE_TIMEOUT_MS
  std::string transport = "auto";             // MEGASCALE_TRANSPORT
  /// MEGASCALE_ALGO: the algorithm asked for per collective (parseAlgorithmRequest); auto chooses.
  AlgorithmRequest algorithms;
  int local_rank = -1;
  int local_size = -1;
  /// The launcher's placement, when it knows it: world ranks [h*k, (h+1)*k) share host h. The host layout is
  /// then known at creation (and passed to strided splits), with no exchange; 0: unknown (MEGASCALE_HOST_BLOCK).
  int host_block = 0;
  transport::TransportOptions transport_options;
  bool node_engine = true;          // MEGASCALE_SHM_COLLECTIVES: used when the transport is shm
  node::NodeOptions node;           // MEGASCALE_SHM_*
  size_t inline_bytes = 64 << 10;   // MEGASCALE_INLINE_BYTES
  LinkCosts link_costs;             // MEGASCALE_NET_MBPS, MEGASCALE_NET_LATENCY_US: the algorithm cost model's
  bool flight_recorder = true;      // MEGASCALE_FLIGHT_RECORDER: record operations (its children inherit it)
  memory::StagingPlan staging;      // MEGASCALE_STAGING_CHUNK_BYTES, MEGASCALE_STAGING_SLOTS: device buffers' transfers

  /// Options from the MEGASCALE_* environment (config registry).
  static CommunicatorOptions fromEnvironment();
};

class Communicator {
 public:
  /// Joins the job the unique id names as `rank` of `nranks`. Publishes this rank's address in the store
  /// (O(1) store operations, no barrier); connections are made later, only to the peers schedules need.
  static std::shared_ptr<Communicator> create(const UniqueId& id, int rank, int nranks, CommunicatorOptions options);
  /// The same over a store the caller already holds (a framework's own store, e.g. torch's): connections
  /// authenticate with `secret`; the transport listens on options.transport_options.bind_address (loopback if
  /// empty). `job_label` names the job in logs.
  static std::shared_ptr<Communicator> createOnStore(std::shared_ptr<Store> store, const std::string& secret,
                                                     const std::string& job_label, int rank, int nranks,
                                                     CommunicatorOptions options);

  /// Joins the job the launcher started (megascale-run, torchrun, srun, mpirun: see bootstrap/launch_env.h),
  /// hosting the job's store when this rank is the one that must; local rank and size come from the launcher.
  static std::shared_ptr<Communicator> createFromEnvironment(CommunicatorOptions options = CommunicatorOptions::fromEnvironment());

  ~Communicator();  // finishes queued operations, then stops
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  int localRank() const { return options_.local_rank; }
  /// The transports this rank listens on, best first, joined by '+': "shm", "tcp", "shm+tcp".
  std::string transportName() const;
  /// The transport this rank sends to `peer` with (shared memory to its own host, the network transport to
  /// another); "" before it first sent to that peer. Any thread.
  std::string peerTransport(int peer) const { return links_->transportTo(peer); }
  /// What took effect: "transport: shm+tcp algorithm: auto node-engine: off host-stage: ranks 0, 1 peers: shm 1
  /// tcp 2" (host-stage: the node engine of this host's ranks serves hierarchical schedules, once known; peers: how
  /// many connected peers each transport serves).
  std::string description() const;
  /// Registers a buffer with this communicator's transports, as ncclCommRegister: transfers from and into it then
  /// make no registration of their own (BufferRegistry). Any thread; deregister before freeing the buffer.
  Status registerBuffer(void* data, size_t size, void** handle) { return registry_->add(data, size, handle); }
  Status deregisterBuffer(void* handle) { return registry_->remove(handle); }
  /// Registrations the transports have made with their devices so far (0 where none needs them).
  uint64_t registrationsMade() const { return registry_->registrationsMade(); }

  std::shared_ptr<Work> allReduce(const void* in, void* out, size_t count, mscDataType_t type, mscRedOp_t op);
  std::shared_ptr<Work> allGather(const void* in, void* out, size_t count, mscDataType_t type);
  std::shared_ptr<Work> reduceScatter(const void* in, void* out, size_t count, mscDataType_t type, mscRedOp_t op);
  std::shared_ptr<Work> broadcast(const void* in, void* out, size_t count, mscDataType_t type, int root);
  std::shared_ptr<Work> reduce(const void* in, void* out, size_t count, mscDataType_t type, mscRedOp_t op, int root);
  std::shared_ptr<Work> allToAll(const void* in, void* out, size_t count, mscDataType_t type);
  /// MPI_Alltoallv's shape: send_counts[p] elements from in + send_displs[p] go to rank p, recv_counts[p] from
  /// rank p land at out + recv_displs[p] (counts and displacements in elements, arrays of size()).
  std::shared_ptr<Work> allToAllv(const void* in, const size_t* send_counts, const size_t* send_displs, void* out,
                                  const size_t* recv_counts, const size_t* recv_displs, mscDataType_t type);
  std::shared_ptr<Work> barrier();

  struct PointToPoint {
    bool is_send;
    void* buffer;
    size_t count;
    mscDataType_t type;
    int peer;
  };
  /// Sends and receives issued together (one phase), so rings of send+recv cannot deadlock.
  std::shared_ptr<Work> pointToPoint(const std::vector<PointToPoint>& ops);

  struct SplitOptions {
    /// The child's traffic class: the IP TOS byte (DSCP << 2) on its sockets, so that switches with
    /// priority queues can favour it (NCCL's trafficClass); -1 keeps the parent's.
    int traffic_class = -1;
  };
  /// Collective over this communicator. Ranks with the same color form a new communicator, ordered by
  /// (key, rank). MSC_SPLIT_NOCOLOR gives nullptr. One all-gather over the parent of (color, key, host); the
  /// child shares the parent's listeners and finds its peers through the parent: no new socket, no store.
  std::shared_ptr<Communicator> split(int color, int key, const SplitOptions& options);
  std::shared_ptr<Communicator> split(int color, int key) { return split(color, key, SplitOptions{}); }

  /// A group every rank can name without asking: the parent's ranks first, first + stride, ..., `count` of
  /// them, in the child's rank order. Megatron's tensor, data and pipeline groups all have this shape.
  struct RankStride {
    int first = 0;
    int stride = 1;
    int count = 0;  // 0: this rank joins no group
  };
  /// Collective over this communicator like split(): every rank calls it, in the same order as its other
  /// splits, naming its own group (count 0: none, and it gets nullptr). No exchange at all: the child shares
  /// the parent's listeners and finds its peers through the parent, so making it costs no message and no store
  /// operation (one set, to announce a shared-memory region, where the child runs the node engine). A rank that
  /// names a group its members do not name never meets them: its first operation times out.
  std::shared_ptr<Communicator> splitStrided(const RankStride& group, const SplitOptions& options);
  std::shared_ptr<Communicator> splitStrided(const RankStride& group) { return splitStrided(group, SplitOptions{}); }

  /// The group's name in heartbeats and logs ("tp", "dp", ...; at most 8 characters are kept). Default:
  /// "world" for a communicator made from a unique id, "split" for a child. Set it before issuing operations.
  void setName(std::string_view name);
  std::string name() const;

  /// Fails the running and queued operations at once; the communicator stays broken.
  void abort();
  /// The error that broke the communicator, or ok.
  Status asyncError() const;
  /// True while operations are queued or running.
  bool busy() const;
  /// Waits until every operation issued so far has finished; returns the first error.
  Status synchronize();

 private:
  struct Task {
    ScheduleSpec spec;
    const void* in = nullptr;
    void* out = nullptr;
    mscDataType_t type;
    mscRedOp_t op;
    std::vector<PointToPoint> p2p;  // a transfer to this rank itself pairs with one from it: a local copy
    const char* p2p_name = "send/recv";
    bool started = false;   // its start is recorded (it began on the caller's thread)
    bool resolved = false;  // its algorithm is chosen and its spec knows the host layout (resolveAlgorithm)
    bool on_device = false; // its buffers are device memory: no node engine step (it reads host memory only)
    uint32_t seq = 0;
    uint32_t tag = 0;
    uint64_t record = 0;  // its flight-recorder ticket
    std::shared_ptr<Work> work;
    /// "all_reduce (1000 x float sum, ring) #7"; built only when needed (errors), off the fast path.
    std::string describe() const;
  };

  Communicator(int rank, int nranks, CommunicatorOptions options, std::unique_ptr<PeerLinks> links,
               std::vector<std::string> transport_names);
  /// The sequence number (split and splitStrided share the count, so every rank numbers its children alike),
  /// transports and traffic class of the next child.
  struct ChildLinks {
    uint64_t sequence;
    std::vector<std::shared_ptr<transport::Transport>> transports;
    int traffic_class;
  };
  ChildLinks nextChild(const SplitOptions& options);
  /// A child over this communicator's listeners: rank `new_rank` of `new_size`, whose rank p is this one's
  /// parent_rank_of(p).
  std::shared_ptr<Communicator> makeChild(const ChildLinks& child_links, int new_rank, int new_size,
                                          std::function<int(int)> parent_rank_of);
  /// Starts the worker thread on the first task: a communicator never used costs no thread. queue_mutex_ held.
  void startWorkerLocked();
  /// Releases `lock` (queue_mutex_) and wakes the worker, out of idleWait() too.
  void wakeWorker(std::unique_lock<std::mutex>& lock);
  /// Sleeps until a task comes or a peer connects (the shared listeners' descriptors), else up to 10 ms.
  void idleWait();
  std::shared_ptr<Work> submitCollective(Collective c, const void* in, void* out, size_t count, mscDataType_t type,
                                         mscRedOp_t op, int root);
  std::shared_ptr<Work> enqueue(Task task);
  void validate(const char* op, const void* in, const void* out, size_t count, mscDataType_t type, mscRedOp_t op_id,
                int root, bool needs_op, bool needs_root) const;
  void workerLoop(std::stop_token stop);
  /// Runs a dequeued task and finishes its Work; running_ was raised for it.
  void execute(Task& task, Status broken);
  /// On the caller's thread, for a one-host communicator: chooses the task's algorithm and, where its schedule
  /// is the node engine's collective alone, starts it (*done when it finished). A failure breaks the communicator.
  Status beginHere(Task& task, bool* done);
  /// Where the task's schedule (chosen now if it is not yet) is the node engine's collective alone, a one-host
  /// communicator's: *schedule points to it (valid until the next task), its start recorded; else null.
  Status loneHostSchedule(Task& task, const Schedule** schedule);
  LoneHostStep loneHostStep(Task& task, const Schedule& schedule);
  /// The node engine serves every rank (they share one host): host_stage_ covers the communicator.
  bool servesWholeHost() const { return host_stage_ != nullptr && host_stage_->size() == nranks_; }
  /// Runs body() for the task: an exception becomes the task's error; an error breaks off the connections (peers
  /// blocked on us fail now rather than at their timeout).
  Status guarded(const Task& task, const std::function<Status()>& body);
  /// The error of a task issued after the communicator broke.
  Status brokenBy(const Task& task, const Status& broken) const;
  /// Records a failure, finishes the Work, lowers running_ and wakes whoever waits.
  void finishTask(Task& task, const Status& status);
  Status run(Task& task);
  /// A task's schedule and its run (the run refers to the schedule: made in place, never moved).
  struct PreparedRun {
    Schedule schedule;
    std::unique_ptr<ScheduleRun> run;
  };
  /// Resolves the task's algorithm (the layout must be known, or the task not need it) and makes its run.
  Status prepareRun(Task& task, bool shared_driver, PreparedRun* out);
  /// For a task whose algorithm waits for the host layout: chooses it now, and the tag that hashes it.
  Status resolveAlgorithm(Task& task);
  bool needsHostLayout(const Task& task) const;
  /// Which ranks share a host: from the launcher when every rank is local, else exchanged once (an all-gather
  /// of host identities, at the first collective that needs it).
  Status ensureHostLayout();
  struct HostReport {
    uint64_t host_key;
    LinkReport network;
  };
  /// The all-gather of host identities that makes the layout, as a run of its own.
  struct LayoutExchange {
    HostReport mine;
    std::vector<HostReport> reports;
    Schedule schedule;
    std::unique_ptr<ScheduleRun> run;
  };
  /// True when the task's algorithm waits for a layout this communicator has yet to exchange.
  bool needsLayoutExchange(const Task& task) const;
  std::unique_ptr<LayoutExchange> startLayoutExchange(bool shared_driver);
  void finishLayoutExchange(const LayoutExchange& exchange);

  // On the progress engine (communicator_progress.cc).
  /// Queues the task for whoever runs this communicator's tasks (decided at the first); releases `lock`.
  void dispatch(Task task, std::unique_lock<std::mutex>& lock);
  bool advanceOnEngine(RunWait** wait);
  bool listenWhileIdle(RunWait** wait);
  /// An operation on the engine: the layout exchange first when it needs one, then its own schedule.
  struct EngineTask {
    Task task;
    Status broken;
    std::unique_ptr<LayoutExchange> layout;
    std::unique_ptr<PreparedRun> prepared;
  };
  Status advanceEngineTask(EngineTask& t, bool* done, RunWait** wait);
  struct EngineSide : ProgressEngine::Client {
    explicit EngineSide(Communicator* c) : self(c) {}
    bool advance(RunWait** wait) override { return self->advanceOnEngine(wait); }
    Communicator* self;
  };
  /// Across hosts, with a layout: the node engine of this rank's host as a stage of hierarchical schedules,
  /// over `region` (this rank's) and the regions of the host's other ranks (`region_of`: by rank).
  void setUpHostStage(std::unique_ptr<node::Region> region, const std::function<node::RegionIdentity(int)>& region_of);
  Schedule pointToPointSchedule(const Task& task) const;

  /// Tells this process's executor how an operation ended (common/heartbeat.h).
  static void reportOutcome(const Status& status);
  /// For error messages: "group dp of 4: world ranks 1, 3, 5, 7; this rank: tp 1 pp 0 dp 2".
  std::string scope() const;
  /// Claims this communicator's flight-recorder block, once world_rank_of_ is set.
  void startRecording();
  /// Records the task as issued (queue_mutex_ held: one writer at a time).
  void recordIssued(Task& task, uint32_t seq);
  /// The task finished: its record, and a dump of the process's record when it timed out.
  void recordFinished(const Task& task, const Status& status);

  const int rank_;
  const int nranks_;
  std::atomic<uint64_t> packed_name_{heartbeat::packName("world")};
  flight::GroupLog flight_;  // this communicator's operations in the flight recorder
  CommunicatorOptions options_;
  std::unique_ptr<PeerLinks> links_;  // the thread running a task only
  // The store children announce shared-memory regions in (they find their peers through links_). Set once at
  // creation.
  std::shared_ptr<Store> store_;
  std::function<int(int)> world_rank_of_;  // this communicator's rank -> the world's
  std::atomic<uint32_t> children_{0};     // splits so far
  std::unique_ptr<BufferRegistry> registry_;  // mscCommRegister's buffers and the scratch's registration
  ScratchCache scratch_;                    // the thread running a task
  memory::QueueCache queues_;               // device engines' queues (the communicator's streams)
  // A one-host communicator's latest lone host-step schedule and what it was built for: a training loop repeats a
  // few operations, which find it here instead of building one each (the thread running a task).
  struct LoneSchedule {
    Collective collective;
    Algorithm algorithm;
    size_t count;
    bool in_place;
    Schedule schedule;
  };
  std::optional<LoneSchedule> lone_cache_;
  // The thread running a task (a split sets it before any task). Shared and immutable: communicators of one
  // process with the same placement hold one copy (a layout is a few integers per rank of the world).
  std::shared_ptr<const HostLayout> layout_;
  // layout_ was known at creation (the launcher's placement, or the parent's): fixed from then on, so a split
  // may read it from any thread.
  bool layout_at_creation_ = false;
  // Across hosts: this rank's shared region and how to find the others', until the layout makes the host stage.
  std::unique_ptr<node::Region> pending_region_;
  std::function<node::RegionIdentity(int)> region_of_;
  std::unique_ptr<HostStage> host_stage_;  // set under queue_mutex_ (abort() reaches it from any thread)
  LinkCosts agreed_links_;  // with layout_: the slowest network any rank reported, so every rank chooses alike
  std::vector<std::string> transport_names_;  // best first
  bool shares_host_memory_ = false;  // one of them moves bytes through memory this host's ranks share (shm)

  // Lock order: queue_mutex_ before a Work's own mutex (abort finishes queued Work under it); never reverse.
  mutable std::mutex queue_mutex_;
  std::condition_variable_any queue_cv_;  // the worker waits here for tasks
  std::condition_variable idle_cv_;       // synchronize() and the destructor wait here for an empty queue
  std::deque<Task> queue_;
  size_t running_ = 0;  // 0 or 1: the worker, or a caller running an inline task; the other waits
  Status broken_;  // guarded by queue_mutex_
  std::atomic<bool> aborted_{false};
  uint32_t next_sequence_ = 0;  // guarded by queue_mutex_
  bool worker_idle_ = false;    // guarded by queue_mutex_: the worker sleeps in idleWait(); wake it through wake_fd_
  Fd wake_fd_;                  // an eventfd, made with the worker
  std::jthread worker_;         // started by the first task
  enum class Driver : uint8_t { kUndecided, kWorker, kEngine };
  Driver driver_ = Driver::kUndecided;  // guarded by queue_mutex_; decided at the first task
  ProgressEngine* engine_ = nullptr;
  bool engine_posted_ = false;               // guarded by queue_mutex_: the engine holds tasks of ours
  std::unique_ptr<EngineTask> engine_task_;  // the engine thread's
  bool listens_while_idle_ = false;          // this communicator answers its rank's listeners when idle
  RunWait idle_wait_;                        // the engine thread's
  EngineSide engine_side_{this};
};

/// Starts a store server that lives until the process exits (rank 0's store under a launcher,
/// mscGetUniqueId's store).
class TcpStoreServer;
TcpStoreServer& startProcessStoreServer(const std::string& secret, const std::string& host, int port);

constexpr uint32_t kPointToPointTag = 0x80000000u;
uint32_t collectiveTag(uint32_t seq, const ScheduleSpec& spec, mscDataType_t type, mscRedOp_t op);


}  // namespace megascale
