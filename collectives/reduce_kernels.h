// Element-wise reduction kernels for every dtype and op. dst may alias a or b exactly (in-place).
// avg reduces like sum; finishAverage divides by the rank count once, at the end.
#pragma once

#include <cstddef>

#include "megascale/megascale.h"

namespace megascale {

/// dst[i] = a[i] op b[i] for i < count.
void reduceElements(mscDataType_t type, mscRedOp_t op, void* dst, const void* a, const void* b, size_t count);

/// buf[i] /= divisor (integer division for integer types, as NCCL's avg).
void finishAverage(mscDataType_t type, void* buf, size_t count, int divisor);

}  // namespace megascale
