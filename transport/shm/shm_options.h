// The shm transport's own options, and its knob (MEGASCALE_SHM_RING_BYTES).
#pragma once

#include <cstddef>

namespace megascale::transport {

struct ShmOptions {
  size_t ring_bytes = 4 << 20;  // each direction's ring, rounded up to a power of two
};

/// MEGASCALE_SHM_RING_BYTES. Throws Error(kInvalidArgument) naming a bad value.
ShmOptions shmOptionsFromConfig();

}  // namespace megascale::transport
