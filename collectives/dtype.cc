#include "collectives/dtype.h"

namespace megascale {

namespace {
struct TypeInfo {
  mscDataType_t type;
  size_t size;
  const char* name;
  const char* alias;
};
constexpr TypeInfo kTypes[] = {
    {mscInt8, 1, "int8", "i8"},         {mscUint8, 1, "uint8", "u8"},       {mscInt32, 4, "int32", "i32"},
    {mscUint32, 4, "uint32", "u32"},    {mscInt64, 8, "int64", "i64"},      {mscUint64, 8, "uint64", "u64"},
    {mscFloat16, 2, "half", "f16"},     {mscFloat32, 4, "float", "f32"},    {mscFloat64, 8, "double", "f64"},
    {mscBfloat16, 2, "bfloat16", "bf16"},
};
constexpr const char* kOps[] = {"sum", "prod", "max", "min", "avg"};
}  // namespace

bool validDtype(int type) { return type >= 0 && type < mscNumTypes; }
bool validOp(int op) { return op >= 0 && op < mscNumOps; }
size_t dtypeSize(mscDataType_t type) { return validDtype(type) ? kTypes[type].size : 0; }
const char* dtypeName(mscDataType_t type) { return validDtype(type) ? kTypes[type].name : "invalid"; }
const char* opName(mscRedOp_t op) { return validOp(op) ? kOps[op] : "invalid"; }

bool parseDtype(const std::string& name, mscDataType_t* type) {
  for (const TypeInfo& t : kTypes) {
    if (name == t.name || name == t.alias || (t.type == mscFloat16 && (name == "float16" || name == "fp16")) ||
        (t.type == mscFloat32 && (name == "float32" || name == "fp32")) ||
        (t.type == mscFloat64 && (name == "float64" || name == "fp64")) ||
        (t.type == mscBfloat16 && name == "bf16")) {
      *type = t.type;
      return true;
    }
  }
  return false;
}

bool parseOp(const std::string& name, mscRedOp_t* op) {
  for (int i = 0; i < mscNumOps; ++i) {
    if (name == kOps[i]) {
      *op = static_cast<mscRedOp_t>(i);
      return true;
    }
  }
  return false;
}

void storeAsType(mscDataType_t type, void* buf, size_t i, double v) {
  auto integer = static_cast<int64_t>(v);
  switch (type) {
    case mscInt8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(integer); break;
    case mscUint8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(integer); break;
    case mscInt32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(integer); break;
    case mscUint32: static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(integer); break;
    case mscInt64: static_cast<int64_t*>(buf)[i] = integer; break;
    case mscUint64: static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(integer); break;
    case mscFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case mscFloat64: static_cast<double*>(buf)[i] = v; break;
    case mscFloat16: static_cast<uint16_t*>(buf)[i] = floatToHalf(static_cast<float>(v)); break;
    case mscBfloat16: static_cast<uint16_t*>(buf)[i] = floatToBf16(static_cast<float>(v)); break;
    default: break;
  }
}

}  // namespace megascale
