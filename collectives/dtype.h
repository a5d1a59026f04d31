// Element types and reduction operators: sizes, names, parsing, and conversions of the 16-bit floats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "collectives/kernels/half_float.h"
#include "megascale/megascale.h"

namespace megascale {

size_t dtypeSize(mscDataType_t type);
const char* dtypeName(mscDataType_t type);  // nccl-tests spelling: "float", "half", "bfloat16", "int32", ...
const char* opName(mscRedOp_t op);          // "sum", "prod", "max", "min", "avg"
bool validDtype(int type);
bool validOp(int op);
/// Accepts nccl-tests names and short forms (f32, bf16, ...). Returns false for unknown names.
bool parseDtype(const std::string& name, mscDataType_t* type);
bool parseOp(const std::string& name, mscRedOp_t* op);

/// Writes v, converted to `type` (integers wrap as C++ conversions do), into element `index` of buf.
/// Used by tests and benchmarks to build inputs and expected outputs in any dtype.
void storeAsType(mscDataType_t type, void* buf, size_t index, double v);

/// IEEE binary16 and bfloat16 <-> binary32, round to nearest even (see kernels/half_float.h).
using half_float::bf16ToFloat;
using half_float::floatToBf16;
using half_float::floatToHalf;
using half_float::halfToFloat;

}  // namespace megascale
