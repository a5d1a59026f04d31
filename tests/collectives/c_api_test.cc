// The C boundary: codes and messages, never exceptions or aborts.
#include "megascale/megascale.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace {

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    mscUniqueId id;
    ASSERT_EQ(mscGetUniqueId(&id), mscSuccess) << mscGetLastError();
    ASSERT_EQ(mscCommInitRank(&comm_, 1, id, 0), mscSuccess) << mscGetLastError();
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(mscCommDestroy(comm_), mscSuccess) << mscGetLastError();
    }
  }
  mscComm_t comm_ = nullptr;
};

TEST_F(CApi, SingleRankCollectivesWork) {
  int32_t in[3] = {1, 2, 3}, out[3] = {};
  ASSERT_EQ(mscAllReduce(in, out, 3, mscInt32, mscSum, comm_), mscSuccess);
  ASSERT_EQ(mscCommSynchronize(comm_), mscSuccess);
  EXPECT_EQ(out[2], 3);
  int count = 0, rank = -1;
  EXPECT_EQ(mscCommCount(comm_, &count), mscSuccess);
  EXPECT_EQ(mscCommUserRank(comm_, &rank), mscSuccess);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(rank, 0);
  mscResult_t async = mscInternalError;
  EXPECT_EQ(mscCommGetAsyncError(comm_, &async), mscSuccess);
  EXPECT_EQ(async, mscSuccess);
}

TEST_F(CApi, BadArgumentsReturnCodesWithMessages) {
  float buf[4] = {};
  EXPECT_EQ(mscAllReduce(nullptr, buf, 4, mscFloat32, mscSum, comm_), mscInvalidArgument);
  EXPECT_NE(std::string(mscGetLastError()).find("null buffer"), std::string::npos) << mscGetLastError();
  EXPECT_EQ(mscAllReduce(buf, buf, 4, static_cast<mscDataType_t>(77), mscSum, comm_), mscInvalidArgument);
  EXPECT_NE(std::string(mscGetLastError()).find("datatype"), std::string::npos) << mscGetLastError();
  EXPECT_EQ(mscAllReduce(buf, buf, 4, mscFloat32, static_cast<mscRedOp_t>(9), comm_), mscInvalidArgument);
  EXPECT_EQ(mscBroadcast(buf, buf, 4, mscFloat32, 3, comm_), mscInvalidArgument);
  EXPECT_EQ(mscAllGather(buf, buf, SIZE_MAX / 3, mscFloat32, comm_), mscInvalidArgument);
  EXPECT_EQ(mscSend(buf, 4, mscFloat32, 0, comm_), mscInvalidArgument);  // to itself
  EXPECT_EQ(mscAllReduce(buf, buf, 4, mscFloat32, mscSum, nullptr), mscInvalidArgument);
  EXPECT_EQ(mscCommCount(comm_, nullptr), mscInvalidArgument);
  EXPECT_EQ(mscGetUniqueId(nullptr), mscInvalidArgument);
  EXPECT_EQ(mscGroupEnd(), mscInvalidArgument);
  EXPECT_EQ(mscCommSplit(comm_, -5, 0, nullptr), mscInvalidArgument);
  EXPECT_EQ(mscAllReduce(buf, buf, 4, mscFloat32, mscSum, comm_), mscSuccess);  // still usable
  EXPECT_EQ(mscCommSynchronize(comm_), mscSuccess);
}

TEST_F(CApi, GroupedCallsAreValidatedAtGroupEnd) {
  float buf[4] = {};
  ASSERT_EQ(mscGroupStart(), mscSuccess);
  ASSERT_EQ(mscGroupStart(), mscSuccess);  // nesting
  EXPECT_EQ(mscAllReduce(buf, buf, 4, mscFloat32, mscSum, comm_), mscSuccess);
  EXPECT_EQ(mscGroupEnd(), mscSuccess);
  EXPECT_EQ(mscAllReduce(buf, buf, 4, static_cast<mscDataType_t>(77), mscSum, comm_), mscSuccess);  // queued
  EXPECT_EQ(mscGroupEnd(), mscInvalidArgument);
  EXPECT_EQ(mscCommSynchronize(comm_), mscSuccess);
}

TEST(CApiInit, MalformedUniqueIdIsRejected) {
  mscUniqueId id;
  std::memset(&id, 0, sizeof(id));
  std::strcpy(id.internal, "not an id");
  mscComm_t comm = nullptr;
  EXPECT_EQ(mscCommInitRank(&comm, 2, id, 0), mscInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::string(mscGetLastError()).find("unique id"), std::string::npos) << mscGetLastError();
  mscUniqueId good;
  ASSERT_EQ(mscGetUniqueId(&good), mscSuccess);
  EXPECT_EQ(mscCommInitRank(&comm, 2, good, 5), mscInvalidArgument);
  EXPECT_EQ(mscCommInitRank(nullptr, 1, good, 0), mscInvalidArgument);
}

TEST(CApiInit, ErrorStringsCoverEveryCode) {
  for (int r = 0; r < mscNumResults; ++r) {
    EXPECT_STRNE(mscGetErrorString(static_cast<mscResult_t>(r)), "unknown result code") << r;
  }
  int version = 0;
  EXPECT_EQ(mscGetVersion(&version), mscSuccess);
  EXPECT_EQ(version, MSC_VERSION_CODE);
}

}  // namespace
