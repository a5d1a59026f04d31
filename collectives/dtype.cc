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

}  // namespace megascale
