// The CUDA engine (collectives/memory/cuda_space.h). On a GPU: every dtype and op reduced by our kernels equals the
// host kernels bit for bit (NaN payloads aside), copies to and from pinned and plain host memory arrive, and each
// ticket reports its own item. Without one (CI): these tests show as skipped with the driver's reason, and the
// space refuses with a message that says what is missing.
#include "collectives/memory/cuda_space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "collectives/dtype.h"
#include "collectives/kernels/random_operands.h"
#include "collectives/memory/cuda_kernels.h"
#include "collectives/reduce_kernels.h"

namespace megascale::memory {
namespace {

#define SKIP_WITHOUT_GPU()                                                                      \
  if (CudaSpace::deviceCount() == 0) GTEST_SKIP() << "needs a GPU: " << CudaApi::get().why;     \
  if (cudaKernelImage().size == 0) GTEST_SKIP() << "this build has no CUDA kernels (no nvcc)"

bool isNan(mscDataType_t type, const uint8_t* p) {
  uint16_t h;
  float f;
  double d;
  switch (type) {
    case mscFloat16: std::memcpy(&h, p, 2); return std::isnan(halfToFloat(h));
    case mscBfloat16: std::memcpy(&h, p, 2); return std::isnan(bf16ToFloat(h));
    case mscFloat32: std::memcpy(&f, p, 4); return std::isnan(f);
    case mscFloat64: std::memcpy(&d, p, 8); return std::isnan(d);
    default: return false;
  }
}

// Equal bits, or both NaN: a GPU returns its canonical NaN where the host keeps an operand's payload.
bool sameBits(mscDataType_t type, const uint8_t* a, const uint8_t* b) {
  return std::memcmp(a, b, dtypeSize(type)) == 0 || (isNan(type, a) && isNan(type, b));
}

// The fatbin nvcc built holds, by name, every kernel the engine looks up (the names of reduce_kernels.cu and of
// cudaReduceKernelName agree); checked wherever the build has the kernels, GPU or not.
TEST(CudaKernels, TheEmbeddedImageHoldsEveryKernelTheEngineLooksUp) {
  const KernelImage image = cudaKernelImage();
  if (image.size == 0) GTEST_SKIP() << "this build has no CUDA kernels (built without nvcc, or with CUDA off)";
  const std::string bytes(reinterpret_cast<const char*>(image.data), image.size);
  std::vector<std::string> names;
  for (int t = 0; t < mscNumTypes; ++t) {
    const auto type = static_cast<mscDataType_t>(t);
    for (mscRedOp_t op : {mscSum, mscProd, mscMax, mscMin}) names.push_back(cudaReduceKernelName(type, op));
    names.push_back(cudaDivideKernelName(type));
  }
  for (const std::string& name : names) {
    EXPECT_NE(bytes.find(name + std::string(1, '\0')), std::string::npos) << name;
  }
  EXPECT_EQ(cudaReduceKernelName(mscBfloat16, mscAvg), "msc_reduce_bf16_sum");
}

TEST(CudaSpaceTest, WithoutAGpuTheSpaceSaysWhatIsMissing) {
  if (CudaSpace::deviceCount() > 0) GTEST_SKIP() << "a GPU is present: the other tests run";
  CudaSpace* space = nullptr;
  const Status s = CudaSpace::forDevice(0, &space);
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable) << s.message();
  EXPECT_NE(s.message().find("cuda"), std::string::npos) << s.message();
  EXPECT_EQ(space, nullptr);
}

TEST(CudaSpaceTest, EveryKernelIsTheHostKernelBitForBit) {
  SKIP_WITHOUT_GPU();
  CudaSpace* space = nullptr;
  ASSERT_TRUE(CudaSpace::forDevice(0, &space).isOk());
  std::unique_ptr<EngineQueue> queue;
  ASSERT_TRUE(space->openQueue(&queue).isOk());
  std::mt19937_64 rng(11);
  const size_t n = 100003;
  for (int t = 0; t < mscNumTypes; ++t) {
    const auto type = static_cast<mscDataType_t>(t);
    const size_t es = dtypeSize(type), bytes = n * es;
    std::vector<uint8_t> a, b, want(bytes), got(bytes);
    kernels::fillRandom(type, a, n, rng);
    kernels::fillRandom(type, b, n, rng);
    void* da = space->allocate(bytes);
    void* db = space->allocate(bytes);
    void* dd = space->allocate(bytes);
    ASSERT_TRUE(da && db && dd);
    ASSERT_TRUE(copyBlocking(da, a.data(), bytes).isOk());
    ASSERT_TRUE(copyBlocking(db, b.data(), bytes).isOk());
    for (mscRedOp_t op : {mscSum, mscProd, mscMax, mscMin, mscAvg}) {
      reduceElements(type, op, want.data(), a.data(), b.data(), n);
      uint64_t ticket = 0;
      ASSERT_TRUE(queue->reduce(type, op, dd, da, db, n, &ticket).isOk());
      if (op == mscAvg) {
        finishAverage(type, want.data(), n, 3);
        ASSERT_TRUE(queue->divide(type, dd, n, 3, &ticket).isOk());
      }
      ASSERT_TRUE(queue->drain(std::chrono::seconds(60)).isOk());
      bool done = false;
      ASSERT_TRUE(queue->test(ticket, &done).isOk());
      EXPECT_TRUE(done);
      ASSERT_TRUE(copyBlocking(got.data(), dd, bytes).isOk());
      size_t wrong = 0;
      for (size_t i = 0; i < n; ++i) wrong += sameBits(type, want.data() + i * es, got.data() + i * es) ? 0 : 1;
      EXPECT_EQ(wrong, 0u) << dtypeName(type) << " " << opName(op);
    }
    space->release(da);
    space->release(db);
    space->release(dd);
  }
}

TEST(CudaSpaceTest, CopiesThroughPinnedStagingArrive) {
  SKIP_WITHOUT_GPU();
  CudaSpace* space = nullptr;
  ASSERT_TRUE(CudaSpace::forDevice(0, &space).isOk());
  std::unique_ptr<EngineQueue> queue;
  ASSERT_TRUE(space->openQueue(&queue).isOk());
  const size_t bytes = 3 << 20;
  auto* pinned = static_cast<uint8_t*>(space->allocateStaging(bytes));
  void* device = space->allocate(bytes);
  ASSERT_TRUE(pinned && device);
  for (size_t i = 0; i < bytes; ++i) pinned[i] = static_cast<uint8_t>(i * 13 + 1);
  const std::vector<uint8_t> sent(pinned, pinned + bytes);
  uint64_t in = 0, out = 0;
  ASSERT_TRUE(queue->copy(device, pinned, bytes, &in).isOk());
  ASSERT_TRUE(queue->drain(std::chrono::seconds(60)).isOk());
  std::memset(pinned, 0, bytes);
  ASSERT_TRUE(queue->copy(pinned, device, bytes, &out).isOk());
  bool done = false;
  while (!done) ASSERT_TRUE(queue->test(out, &done).isOk());
  EXPECT_EQ(std::memcmp(pinned, sent.data(), bytes), 0);
  space->releaseStaging(pinned);
  space->release(device);
}

}  // namespace
}  // namespace megascale::memory
