// The verdict of a data check, computed without the library under test: the bytes an element must hold
// (encoded here, not by the library's conversions or kernels) and the exchange of every rank's count of wrong
// elements (records that check themselves, not a library all-reduce whose bug could report "0 wrong").
// Used by collective_check and the *_perf tools; never linked into libmegascale.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "megascale/megascale.h"

namespace megascale::reference {

/// Bytes of one element; 0 for a type this file does not know.
size_t elementBytes(mscDataType_t type);

/// Stores `value` as element `index` of a `type` array: integers wrap as a C cast does, floating-point types
/// round to nearest even (float16 and bfloat16 encoded bit by bit here).
void encode(mscDataType_t type, double value, void* array, size_t index);

/// Stores what a reduction must give: `exact` is the exact sum, product, minimum or maximum over `nranks`
/// ranks; avg divides it once by nranks in the type (integers truncate toward zero, as NCCL's avg does).
void encodeReduced(mscDataType_t type, mscRedOp_t op, double exact, int nranks, void* array, size_t index);

/// How many wrong elements all ranks saw together. Every rank calls it with its own count; the counts travel
/// in an all-gather of records that carry their rank and a checksum, so a collective that zeroes or garbles
/// the records cannot report success: *problem then names the rank whose record came back wrong and the
/// result is -1. A rank that saw wrong elements fails on its own count whatever the exchange reports.
int64_t totalWrong(int64_t local_wrong, mscComm_t comm, std::string* problem);

}  // namespace megascale::reference
