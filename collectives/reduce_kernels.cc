#include "collectives/reduce_kernels.h"

#include "collectives/dtype.h"
#include "collectives/kernels/kernel_table.h"

namespace megascale {

// Op numbering: mscSum, mscProd, mscMax, mscMin are the table's slots 0..3; avg reduces as sum.
void reduceElements(mscDataType_t type, mscRedOp_t op, void* dst, const void* a, const void* b, size_t count) {
  if (!validDtype(type) || !validOp(op) || count == 0) return;
  int slot = op == mscAvg ? static_cast<int>(mscSum) : static_cast<int>(op);
  kernels::activeTable().reduce[type][slot](dst, a, b, count);
}

void finishAverage(mscDataType_t type, void* buf, size_t count, int divisor) {
  if (!validDtype(type) || count == 0) return;
  kernels::activeTable().divide[type](buf, count, divisor);
}

}  // namespace megascale
