#include "common/heartbeat.h"

#include <pthread.h>
#include <unistd.h>

#include <atomic>

namespace megascale::heartbeat {

std::string unpackName(uint64_t packed) {
  std::string text;
  for (; packed != 0; packed >>= 8) text += static_cast<char>(packed & 0xff);
  return text;
}

namespace {

// MEGASCALE_HEARTBEAT=fd:index, set by the executor.
Slot* mapFromEnvironment() {
  auto* slot = reinterpret_cast<Slot*>(mapSharedArea("MEGASCALE_HEARTBEAT", kSlotBytes));
  if (slot != nullptr) slot->pid.store(static_cast<uint64_t>(getpid()), std::memory_order_relaxed);
  return slot;
}

// A forked child is not the rank the executor watches. Told by an atfork handler, not by comparing getpid() on
// every report: a system call per report was a tenth of a small shared-memory all-reduce.
std::atomic<bool> forked_child{false};
void markForkedChild() { forked_child.store(true, std::memory_order_relaxed); }

}  // namespace

Slot* mySlot() {
  static Slot* const slot = [] {
    pthread_atfork(nullptr, nullptr, markForkedChild);
    return mapFromEnvironment();
  }();
  return slot != nullptr && !forked_child.load(std::memory_order_relaxed) ? slot : nullptr;
}

void reportStep(int64_t step, std::string_view phase) {
  Slot* s = mySlot();
  if (s == nullptr) return;
  s->step.store(step, std::memory_order_relaxed);
  s->phase.store(packName(phase), std::memory_order_relaxed);
  s->beats.fetch_add(1, std::memory_order_release);
}

void reportIssued(uint64_t packed_group, uint32_t seq, uint32_t collective_kind) {
  Slot* s = mySlot();
  if (s == nullptr) return;
  s->op_group.store(packed_group, std::memory_order_relaxed);
  s->op_seq.store(seq, std::memory_order_relaxed);
  s->op_kind.store(collective_kind + 1, std::memory_order_relaxed);
  s->ops_issued.fetch_add(1, std::memory_order_release);
}

void reportFinished(Outcome outcome) {
  Slot* s = mySlot();
  if (s == nullptr) return;
  if (outcome == Outcome::kTransportError) s->transport_errors.fetch_add(1, std::memory_order_relaxed);
  if (outcome == Outcome::kOtherError) s->other_errors.fetch_add(1, std::memory_order_relaxed);
  s->ops_completed.fetch_add(1, std::memory_order_release);
}

}  // namespace megascale::heartbeat
