// Publishing stages and waiting for peers' stages. The sleep protocol (no lost wake-ups): a waiter sets
// `sleeping`, reads its wake word, re-checks the condition, then futex-waits on the word it read; a publisher
// stores its stage, then reads each peer's `sleeping` and bumps and wakes those that sleep. Both sides use
// sequentially consistent accesses, so either the waiter sees the stage or the publisher sees the sleeper.
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstring>

#include "collectives/node/node_engine.h"

namespace megascale::node {

namespace {

void futexWait(std::atomic<uint32_t>* word, uint32_t expected, long nanoseconds) {
  timespec timeout{0, nanoseconds};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT, expected, &timeout, nullptr, 0);
}

void wakeOwner(RegionHeader* h) {
  h->wake_word.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&h->wake_word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

// Oversubscribed waiters yield (~1 us a switch here) for ~10-20 ms before sleeping: a futex wake-up costs
// more than a switch, and measured on 2 cores with 8 ranks, sleeping after ~2 ms doubled small latencies.
constexpr uint32_t kYieldsBeforeSleep = 20000;
constexpr long kSleepSliceNs = 10'000'000;      // futex waits re-check abort, peer failure and deadline

}  // namespace

void NodeEngine::post(uint64_t seq, uint32_t tag, uint64_t bytes, const void* in, const void* out) {
  headers_[rank_]->descriptor[seq & 1] =
      OpDescriptor{tag, 0, bytes, reinterpret_cast<uint64_t>(in), reinterpret_cast<uint64_t>(out)};
  publish(stageOf(seq, Stage::kPosted));
}

void NodeEngine::publish(uint64_t stage_value) {
  headers_[rank_]->stage.store(stage_value, std::memory_order_seq_cst);
  wakeSleepingPeers();
}

void NodeEngine::wakeSleepingPeers() {
  for (int q = 0; q < nranks_; ++q) {
    if (q != rank_ && headers_[q] != nullptr && headers_[q]->sleeping.load(std::memory_order_seq_cst) != 0) {
      wakeOwner(headers_[q]);
    }
  }
}

Status NodeEngine::awaitAll(uint64_t seq, uint64_t k, const NodeCall& call, uint64_t bytes, bool check) {
  static const char* const kWhat[] = {"", "input", "reduced part", "completion"};
  uint64_t value = stageOf(seq, k);
  for (int i = 1; i < nranks_; ++i) {
    int q = (rank_ + i) % nranks_;
    MSC_RETURN_IF_ERROR(awaitPeer(q, headers_[q]->stage, value, call, kWhat[k]));
    if (!check) continue;
    const OpDescriptor& d = headers_[q]->descriptor[seq & 1];
    if (d.tag != call.tag || d.bytes != bytes) {
      return fail(call, ErrorCode::kMismatch,
                  nameOf(q) + " is running a different operation (its tag " + std::to_string(d.tag) +
                      " with " + std::to_string(d.bytes) + " bytes, ours " + std::to_string(call.tag) + " with " +
                      std::to_string(bytes) + "; do all ranks call the same collectives with the same counts and types?)");
    }
  }
  return Status::ok();
}

Status NodeEngine::awaitPeer(int peer, const std::atomic<uint64_t>& word, uint64_t value, const NodeCall& call,
                             const char* waiting_for) {
  if (word.load(std::memory_order_acquire) >= value) return Status::ok();
  for (uint32_t i = 0; i < spin_iterations_; ++i) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
    if (word.load(std::memory_order_acquire) >= value) return Status::ok();
  }
  return slowWait(peer, word, value, call, waiting_for);
}

Status NodeEngine::slowWait(int peer, const std::atomic<uint64_t>& word, uint64_t value, const NodeCall& call,
                            const char* waiting_for) {
  RegionHeader* me = headers_[rank_];
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  uint32_t yields = 0;
  auto trouble = [&]() -> Status {
    std::string waiting = " while this rank waited for " +
                          (peer >= 0 ? nameOf(peer) + "'s " : std::string("the ")) + waiting_for;
    if (call.aborted != nullptr && call.aborted->load(std::memory_order_relaxed)) {
      return fail(call, ErrorCode::kAborted, "aborted by the user");
    }
    for (int q = 0; q < nranks_; ++q) {
      if (q == rank_ || (peer >= 0 && q != peer)) continue;
      if (headers_[q]->failed.load(std::memory_order_acquire) != 0) {
        return fail(call, ErrorCode::kPeerLost, nameOf(q) + " failed" + waiting);
      }
      if (peers_[q]->ownerExited()) {
        return fail(call, ErrorCode::kPeerLost,
                    nameOf(q) + " (pid " + std::to_string(headers_[q]->pid) + ") exited" + waiting);
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return fail(call, ErrorCode::kTimeout,
                  "no progress for " + std::to_string(options_.timeout.count()) + " ms" + waiting +
                      " (a peer hung or died; MEGASCALE_TIMEOUT_MS sets the limit)");
    }
    return Status::ok();
  };
  while (true) {
    if (word.load(std::memory_order_acquire) >= value) return Status::ok();
    if (oversubscribed_ && yields < kYieldsBeforeSleep) {
      sched_yield();
      if ((++yields & 255) == 0 && word.load(std::memory_order_acquire) < value) MSC_RETURN_IF_ERROR(trouble());
      continue;
    }
    me->sleeping.store(1, std::memory_order_seq_cst);
    uint32_t seen = me->wake_word.load(std::memory_order_seq_cst);
    if (word.load(std::memory_order_seq_cst) >= value) {
      me->sleeping.store(0, std::memory_order_relaxed);
      return Status::ok();
    }
    futexWait(&me->wake_word, seen, kSleepSliceNs);
    me->sleeping.store(0, std::memory_order_relaxed);
    // A peer may post and then exit at once: what it posted counts, so look before judging its exit.
    if (word.load(std::memory_order_acquire) >= value) return Status::ok();
    MSC_RETURN_IF_ERROR(trouble());
  }
}

void NodeEngine::interrupt() { wakeOwner(own_->header()); }

void NodeEngine::markFailed() {
  own_->header()->failed.store(1, std::memory_order_seq_cst);
  for (int q = 0; q < static_cast<int>(headers_.size()); ++q) {
    if (q != rank_ && headers_[q] != nullptr) wakeOwner(headers_[q]);
  }
}

}  // namespace megascale::node
