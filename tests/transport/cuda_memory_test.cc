#include "transport/cuda_memory.h"

#include <gtest/gtest.h>

namespace megascale::transport {
namespace {

TEST(PageRange, CoversTheBufferWithWholePagesAndSaysWhereItStarts) {
  PageRange r = pageRangeFor(0x10000 + 100, 50, 4096);
  EXPECT_EQ(r.begin, 0x10000u);
  EXPECT_EQ(r.bytes, 4096u);
  EXPECT_EQ(r.offset, 100u);
  r = pageRangeFor(0x10000 + 4000, 200, 4096);  // straddles a page boundary
  EXPECT_EQ(r.begin, 0x10000u);
  EXPECT_EQ(r.bytes, 8192u);
  EXPECT_EQ(r.offset, 4000u);
  r = pageRangeFor(0x20000, 65536, 65536);  // aligned already
  EXPECT_EQ(r.begin, 0x20000u);
  EXPECT_EQ(r.bytes, 65536u);
  EXPECT_EQ(r.offset, 0u);
}

TEST(CudaDriver, WithoutADriverNothingIsDeviceMemoryAndExportSaysWhy) {
  const CudaDriver& cuda = CudaDriver::get();
  if (cuda.available()) GTEST_SKIP() << "a CUDA driver is present";
  EXPECT_NE(cuda.why().find("cuda"), std::string::npos) << cuda.why();
  int local = 0;
  EXPECT_FALSE(cuda.isDevicePointer(&local));
  int fd = -1;
  Status s = cuda.exportDmaBuf(pageRangeFor(0x10000, 10, 4096), &fd);
  EXPECT_EQ(s.code(), ErrorCode::kUnavailable);
  EXPECT_NE(s.message().find("0x10000"), std::string::npos) << s.message();
  EXPECT_EQ(fd, -1);
}

}  // namespace
}  // namespace megascale::transport
