// Copies with non-temporal stores: the destination's cache lines are written without being read first (no
// read-for-ownership), which cuts the memory traffic of a large copy from 3 to 2 bytes per byte. Only for
// destinations that will not be read again soon (collective outputs much larger than the cache).
#pragma once

#include <cstddef>

namespace megascale::kernels {

void streamCopy(void* dst, const void* src, size_t bytes);

}  // namespace megascale::kernels
