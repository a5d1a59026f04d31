// Pools of request slots: up to N, each made when first needed and then kept, so a connection that only ever
// has one request in flight (most of a large job's) costs one slot, not N, and a warm pool allocates nothing on
// the data path. A full pool means "retry later". A slot never moves (requests are pointers to it).
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace megascale::transport {

template <typename Slot, size_t N>
class SlotPool {
 public:
  /// A slot not in use, or null when all N are.
  Slot* free() {
    for (const std::unique_ptr<Slot>& s : slots_) {
      if (!s->in_use) return s.get();
    }
    if (slots_.size() == N) return nullptr;
    slots_.push_back(std::make_unique<Slot>());
    return slots_.back().get();
  }

  /// Whether some slot in use satisfies pred (any slot in use, without one).
  template <typename P>
  bool anyInUse(P&& pred) const {
    for (const std::unique_ptr<Slot>& s : slots_) {
      if (s->in_use && pred(static_cast<const Slot&>(*s))) return true;
    }
    return false;
  }
  bool anyInUse() const {
    return anyInUse([](const Slot&) { return true; });
  }

  /// Calls f on every slot in use (a comm closing cancels what is still posted).
  template <typename F>
  void forEachInUse(F&& f) {
    for (const std::unique_ptr<Slot>& s : slots_) {
      if (s->in_use) f(*s);
    }
  }

 private:
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace megascale::transport
