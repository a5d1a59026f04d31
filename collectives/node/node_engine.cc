#include "collectives/node/node_engine.h"

#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "collectives/dtype.h"
#include "common/log.h"

namespace megascale::node {

namespace {

/// How many pause instructions take a microsecond here (measured once; a pause is 10-150 cycles by CPU).
uint32_t pausesPerMicrosecond() {
  static const uint32_t value = [] {
    constexpr uint32_t kPauses = 4000;
    auto start = std::chrono::steady_clock::now();
    for (uint32_t i = 0; i < kPauses; ++i) {
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    return static_cast<uint32_t>(std::max(1.0, kPauses / std::max(us, 1e-3)));
  }();
  return value;
}

int usableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

NodeEngine::NodeEngine(int rank, int nranks, NodeOptions options, std::unique_ptr<Region> own, IdentityLookup lookup)
    : rank_(rank), nranks_(nranks), options_(options), lookup_(std::move(lookup)), own_(std::move(own)) {
  options_.chunk_bytes = std::max<size_t>(options_.chunk_bytes, 4096);
  own_->header()->rank = rank;
  options_.slot_bytes = own_->slotBytes();
  // More ranks than cores: a spinning waiter would hold the core the rank it waits for needs.
  oversubscribed_ = nranks_ > usableCpus();
  // An algorithm choice: every rank must make the same one, so it depends on the host, not on affinity.
  combine_small_ = options_.combine >= 0 ? options_.combine == 1
                                         : nranks_ > static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  uint64_t spin_us = static_cast<uint64_t>(options_.spin.count() / 1000);
  spin_iterations_ = oversubscribed_ ? 4 : static_cast<uint32_t>(std::min<uint64_t>(spin_us * pausesPerMicrosecond(), 1u << 30));
}

NodeEngine::~NodeEngine() = default;

std::string NodeEngine::nameOf(int q) const { return rank_names_ ? rank_names_(q) : "rank " + std::to_string(q); }

Status NodeEngine::fail(const NodeCall& call, ErrorCode code, const std::string& why) const {
  return Status(code, (call.describe ? call.describe() : std::string(collectiveName(call.collective))) + ": " +
                          nameOf(rank_) + ": " + why);
}

void NodeEngine::part(size_t count, int index, size_t* lo, size_t* n) const {
  size_t base = count / static_cast<size_t>(nranks_);
  size_t extra = count % static_cast<size_t>(nranks_);
  size_t i = static_cast<size_t>(index);
  *lo = i * base + std::min(i, extra);
  *n = base + (i < extra ? 1 : 0);
}

Status NodeEngine::connect(const NodeCall& call) {
  if (connected_) return Status::ok();
  peers_.resize(static_cast<size_t>(nranks_));
  headers_.assign(static_cast<size_t>(nranks_), nullptr);
  headers_[rank_] = own_->header();
  bool can_read_all = true;
  for (int q = 0; q < nranks_; ++q) {
    if (q == rank_ || peers_[q]) continue;
    RegionIdentity id;
    try {
      id = lookup_(q);
    } catch (const Error& e) {
      return fail(call, e.code(), "looking up " + nameOf(q) + "'s shared memory: " + e.what());
    }
    Status s = Region::attach(id, q, &peers_[q]);
    if (!s.isOk()) return fail(call, s.code(), s.message());
    headers_[q] = peers_[q]->header();
    uint64_t magic = 0;
    can_read_all = can_read_all && peers_[q]->readOwnerMemory(&magic, headers_[q]->self_address, sizeof(magic)).isOk() &&
                   magic == kRegionMagic;
  }
  // Every rank must take the same path, so cross-memory attach is used only if all ranks can read all others.
  own_->header()->ready.store(can_read_all ? 2 : 1, std::memory_order_seq_cst);
  publish(own_->header()->stage.load(std::memory_order_relaxed));  // wakes peers waiting for `ready`
  bool all = can_read_all;
  for (int q = 0; q < nranks_; ++q) {
    if (q == rank_) continue;
    MSC_RETURN_IF_ERROR(awaitPeer(q, headers_[q]->ready, 1, call, "shared-memory setup"));
    all = all && headers_[q]->ready.load(std::memory_order_acquire) == 2;
  }
  cma_ = all;
  if (!cma_) MSC_LOG_INFO("node engine: cross-memory attach not allowed between all ranks; large messages use slots");
  chunk_.reset(new uint8_t[2 * options_.chunk_bytes]);
  connected_ = true;
  return Status::ok();
}

Status NodeEngine::inRounds(const NodeCall& call, size_t round, Status (NodeEngine::*one)(const NodeCall&, size_t, size_t)) {
  if (round == 0) {
    return fail(call, ErrorCode::kInvalidArgument, "a shared-memory slot of " + std::to_string(options_.slot_bytes) +
                                                       " bytes cannot hold one element per rank; raise MEGASCALE_SHM_SLOT_BYTES");
  }
  size_t offset = 0;
  do {  // at least one round, so ranks that disagree about the count meet and find out
    MSC_RETURN_IF_ERROR((this->*one)(call, offset, std::min(round, call.count - offset)));
    offset += round;
  } while (offset < call.count);
  return Status::ok();
}

Status NodeEngine::run(const NodeCall& call) {
  size_t es = dtypeSize(call.type);
  if (nranks_ == 1) {
    if (call.out != call.in && call.count > 0) std::memmove(call.out, call.in, call.count * es);
    return Status::ok();
  }
  MSC_RETURN_IF_ERROR(connect(call));
  switch (call.collective) {
    case Collective::kAllReduce:
      return allReduce(call);
    case Collective::kAllGather:
      return allGather(call);
    case Collective::kReduceScatter:
      return reduceScatter(call);
    default:
      return fail(call, ErrorCode::kInternal, "the node engine does not run this collective");
  }
}

}  // namespace megascale::node
