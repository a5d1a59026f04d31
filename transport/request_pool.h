// Fixed pools of request slots: no allocation on the data path; a full pool means "retry later".
#pragma once

#include <cstddef>

namespace megascale::transport {

template <typename Slot, size_t N>
Slot* freeSlot(Slot (&pool)[N]) {
  for (Slot& s : pool) {
    if (!s.in_use) return &s;
  }
  return nullptr;
}

}  // namespace megascale::transport
