// The node engine: all-reduce, all-gather and reduce-scatter among ranks that share one host, through the
// ranks' shared regions (node_region.h) instead of a transport. Three data paths, chosen by size:
//  - one-shot (small all-reduce): each rank copies its input into its slot, then every rank reduces all slots
//    in rank order. Two synchronisation-free flag flips; no syscall, lock or allocation.
//  - slot rounds (medium, or when cross-memory attach is not allowed): rounds of at most a slot; an all-reduce
//    round reduce-scatters through the slots and all-gathers from them (each rank reduces 1/n of the round).
//  - cross-memory attach (large): ranks publish their buffer addresses and read each other's buffers with
//    process_vm_readv, so every byte crosses between processes once; reductions run on L2-sized chunks.
// Waiting spins briefly, then (oversubscribed) yields, then sleeps on a futex in the waiter's region that
// the publisher wakes. Ownership: one thread at a time runs operations (the communicator guarantees it);
// interrupt() may be called from any thread, markFailed() only from the thread that ran the failed operation.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/node/node_region.h"
#include "collectives/schedule.h"
#include "common/status.h"
#include "megascale/megascale.h"

namespace megascale::node {

struct NodeOptions {
  size_t slot_bytes = 1 << 20;        // MEGASCALE_SHM_SLOT_BYTES
  size_t one_shot_max = 64 << 10;     // MEGASCALE_SHM_ONESHOT_MAX: one-shot all-reduce while bytes x (ranks-1) fit
  size_t cma_min = 256 << 10;         // MEGASCALE_SHM_CMA_MIN: all-reduces this large read peers' buffers directly
  size_t cma_min_gather = 32 << 10;   // MEGASCALE_SHM_CMA_MIN_GATHER: the same for all-gather and reduce-scatter
                                      // (all ranks' data); without a reduction there is no staging to save
  size_t chunk_bytes = 128 << 10;     // reduction chunk of the cross-memory path (fits L2 with its operand)
  size_t stream_min = 16 << 20;       // MEGASCALE_SHM_STREAM_MIN: larger outputs use non-temporal stores
  std::chrono::nanoseconds spin{50'000};  // MEGASCALE_SHM_SPIN_NS: busy-wait before yielding or sleeping
  std::chrono::milliseconds timeout{300000};
  int combine = -1;  // small all-reduces combine on one rank: -1 when ranks outnumber the host's cores, 0 no, 1 yes
};

/// One collective call as the engine sees it.
struct NodeCall {
  Collective collective;
  const void* in;
  void* out;
  size_t count;  // elements: per rank for all-gather and reduce-scatter (NCCL's convention)
  mscDataType_t type;
  mscRedOp_t op;
  uint32_t tag;  // equal on all ranks iff they agree on the call
  const std::atomic<bool>* aborted = nullptr;
  std::function<std::string()> describe;  // "all_reduce (1000 x float sum) #7", built only for errors
};

class NodeEngine {
 public:
  /// Finds a peer's region identity (store lookup or split table); may block; throws Error naming the peer.
  using IdentityLookup = std::function<RegionIdentity(int peer)>;

  /// Takes this rank's region (Region::create; made before the rank is known in a split); peers are mapped on
  /// first use.
  NodeEngine(int rank, int nranks, NodeOptions options, std::unique_ptr<Region> own, IdentityLookup lookup);
  ~NodeEngine();

  static bool handles(Collective c) {
    return c == Collective::kAllReduce || c == Collective::kAllGather || c == Collective::kReduceScatter;
  }
  /// Runs the whole operation, waiting as long as peers need (up to the timeout).
  Status run(const NodeCall& call);
  /// For the caller's own thread: starts the operation and finishes it if peers keep up within the spin
  /// budget, so a small collective costs no thread hand-off. Never waits much longer than the budget (callers
  /// may issue on several communicators before waiting). *done false: resume() must run next, on any thread.
  Status begin(const NodeCall& call, bool* done);
  /// Finishes what begin() left (possibly all of it), waiting as long as needed.
  Status resume(const NodeCall& call);
  /// How errors name the engine's rank q (default "rank q"): a host stage's engine numbers the host's ranks
  /// 0..L-1, its messages give their ranks in the communicator. Call before the first operation.
  void nameRanks(std::function<std::string(int)> name_of) { rank_names_ = std::move(name_of); }
  /// Wakes this rank if it sleeps in a wait (abort).
  void interrupt();
  /// Tells peers this rank broke; their waits on it fail at once. Call from the thread that runs operations.
  void markFailed();

 private:
  struct Stage {
    static constexpr uint64_t kPosted = 1, kReduced = 2, kDone = 3;
  };
  static uint64_t stageOf(uint64_t seq, uint64_t k) { return 4 * seq + k; }

  Status connect(const NodeCall& call);
  Status allReduce(const NodeCall& call);
  Status allReduceOneShot(const NodeCall& call);
  uint64_t allReduceOneShotPost(const NodeCall& call);
  Status allReduceOneShotFinish(const NodeCall& call, uint64_t seq);
  Status allReduceCombining(const NodeCall& call);
  uint64_t allReduceCombiningArrive(const NodeCall& call);
  Status allReduceCombiningFinish(const NodeCall& call, uint64_t round);
  Status allReduceRound(const NodeCall& call, size_t offset, size_t count);
  Status allReduceCrossMemory(const NodeCall& call);
  Status allGather(const NodeCall& call);
  Status reduceScatter(const NodeCall& call);
  /// Whether an output of `bytes` is written with non-temporal stores.
  bool streams(const NodeCall& call, size_t bytes) const;
  /// Copies bytes from peer's memory at remote to dst (cross-memory attach).
  Status pull(const NodeCall& call, int peer, uint8_t* dst, uint64_t remote, size_t bytes);
  /// dst = reduction of input elements [first, first + count) over all ranks; with to_peers, also written to
  /// the same place in every peer's output.
  Status reduceCrossMemory(const NodeCall& call, uint64_t seq, size_t first, size_t count, uint8_t* dst,
                           bool to_peers);
  /// Runs one(call, offset, n) over the call's elements in rounds of at most `round` elements.
  Status inRounds(const NodeCall& call, size_t round, Status (NodeEngine::*one)(const NodeCall&, size_t, size_t));
  Status allGatherRound(const NodeCall& call, size_t offset, size_t count);
  uint64_t allGatherPost(const NodeCall& call, size_t offset, size_t count);
  Status allGatherFinish(const NodeCall& call, uint64_t seq, size_t offset, size_t count);
  Status reduceScatterRound(const NodeCall& call, size_t offset, size_t count);
  uint64_t reduceScatterPost(const NodeCall& call, size_t offset, size_t count);
  Status reduceScatterFinish(const NodeCall& call, uint64_t seq, size_t offset, size_t count);
  /// Which single-round path a small call takes (kNone: a multi-phase one that only run() does).
  enum class Quick { kNone, kOneShot, kCombining, kGather, kScatter };
  Quick quickPath(const NodeCall& call) const;
  /// Spins (or yields, oversubscribed) up to the spin budget; true once ready() holds.
  template <typename Ready>
  bool settlesSoon(Ready ready) const;

  /// Writes this rank's descriptor for seq and releases stage (4 * seq + k); wakes sleeping peers.
  void post(uint64_t seq, uint32_t tag, uint64_t bytes, const void* in, const void* out);
  void publish(uint64_t stage_value);
  void wakeSleepingPeers();
  /// Waits until every peer's stage reaches stage_value; with check, also that peers agree on the call.
  Status awaitAll(uint64_t seq, uint64_t k, const NodeCall& call, uint64_t bytes, bool check);
  /// Waits until word >= value; peer is the rank expected to move it (-1: any rank), named in errors.
  Status awaitPeer(int peer, const std::atomic<uint64_t>& word, uint64_t value, const NodeCall& call,
                   const char* waiting_for);
  Status slowWait(int peer, const std::atomic<uint64_t>& word, uint64_t value, const NodeCall& call,
                  const char* waiting_for);
  Status fail(const NodeCall& call, ErrorCode code, const std::string& why) const;
  std::string nameOf(int q) const;
  /// Rank q's region: this rank's own, or a mapped peer's.
  const Region& regionOf(int q) const { return q == rank_ ? *own_ : *peers_[q]; }
  /// Element range [*lo, *lo + *n) of part `index` when count elements are cut into nranks_ parts.
  void part(size_t count, int index, size_t* lo, size_t* n) const;

  const int rank_;
  const int nranks_;
  NodeOptions options_;
  IdentityLookup lookup_;
  std::function<std::string(int)> rank_names_;
  std::unique_ptr<Region> own_;
  std::vector<std::unique_ptr<Region>> peers_;  // by rank; [rank_] is empty
  std::vector<RegionHeader*> headers_;          // by rank, own included
  bool connected_ = false;
  bool cma_ = false;          // every rank may read every other rank's memory
  bool oversubscribed_ = false;  // more ranks than this rank's cores: yield instead of spinning
  bool combine_small_ = false;   // more ranks than the host's cores: small all-reduces combine on one rank
  uint64_t combining_rounds_ = 0;
  // Set by begin() when it returns unfinished: the started half resume() must finish (kNone: nothing was
  // started, resume() runs the whole operation).
  Quick pending_ = Quick::kNone;
  uint64_t pending_seq_ = 0;
  uint32_t spin_iterations_ = 0;
  uint64_t seq_ = 0;          // last operation (round) started; equal on all ranks between calls
  std::unique_ptr<uint8_t[]> chunk_;  // the cross-memory path's accumulator and pulled chunk
};

}  // namespace megascale::node
