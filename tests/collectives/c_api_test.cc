// The C boundary: codes and messages, never exceptions or aborts.
#include "megascale/megascale.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "collectives/schedule.h"
#include "common/heartbeat.h"

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

TEST_F(CApi, RegisteredBuffersWorkAndBadRegistrationsAreErrors) {
  float in[256], out[256] = {};
  for (int i = 0; i < 256; ++i) in[i] = static_cast<float>(i);
  void *in_handle = nullptr, *out_handle = nullptr;
  ASSERT_EQ(mscCommRegister(comm_, in, sizeof(in), &in_handle), mscSuccess) << mscGetLastError();
  ASSERT_EQ(mscCommRegister(comm_, out, sizeof(out), &out_handle), mscSuccess) << mscGetLastError();
  EXPECT_NE(in_handle, out_handle);
  ASSERT_EQ(mscAllReduce(in, out, 256, mscFloat32, mscSum, comm_), mscSuccess);
  ASSERT_EQ(mscCommSynchronize(comm_), mscSuccess);
  EXPECT_EQ(out[255], 255.0f);
  void* handle = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(mscCommRegister(comm_, nullptr, 16, &handle), mscInvalidArgument);
  EXPECT_NE(std::string(mscGetLastError()).find("rank 0: registering 16 bytes: null buffer"), std::string::npos)
      << mscGetLastError();
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(mscCommRegister(comm_, in, 0, &handle), mscInvalidArgument);
  EXPECT_EQ(mscCommRegister(comm_, in, 16, nullptr), mscInvalidArgument);
  EXPECT_EQ(mscCommRegister(nullptr, in, 16, &handle), mscInvalidArgument);
  EXPECT_EQ(mscCommDeregister(comm_, in_handle), mscSuccess) << mscGetLastError();
  EXPECT_EQ(mscCommDeregister(comm_, in_handle), mscInvalidArgument);  // twice
  EXPECT_NE(std::string(mscGetLastError()).find("not a registration of this communicator"), std::string::npos)
      << mscGetLastError();
  EXPECT_EQ(mscCommDeregister(comm_, in), mscInvalidArgument);  // a buffer, not a handle
  EXPECT_EQ(mscCommDeregister(comm_, out_handle), mscSuccess) << mscGetLastError();
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

TEST_F(CApi, NamesAndHeartbeatsCheckTheirArguments) {
  EXPECT_EQ(mscCommSetName(comm_, nullptr), mscInvalidArgument);
  EXPECT_NE(std::string(mscGetLastError()).find("mscCommSetName"), std::string::npos);
  EXPECT_EQ(mscCommSetName(nullptr, "x"), mscInvalidArgument);
  EXPECT_EQ(mscHeartbeat(1, nullptr), mscSuccess);  // no executor here: nothing to report to
}

// What a rank under an executor does. Run in a fresh process (a forked one never reports: its parent may
// have mapped its own slot, or none, before it).
TEST(CApiHeartbeat, RankBody) {
  if (std::getenv("MEGASCALE_HEARTBEAT") == nullptr) GTEST_SKIP() << "the body of the test below";
  mscUniqueId id;
  mscComm_t comm;
  float in[4] = {1, 2, 3, 4}, out[4];
  ASSERT_EQ(mscGetUniqueId(&id), mscSuccess);
  ASSERT_EQ(mscCommInitRank(&comm, 1, id, 0), mscSuccess);
  ASSERT_EQ(mscCommSetName(comm, "grads"), mscSuccess);
  ASSERT_EQ(mscHeartbeat(7, "backward"), mscSuccess);
  ASSERT_EQ(mscAllReduce(in, out, 4, mscFloat32, mscSum, comm), mscSuccess);
  ASSERT_EQ(mscCommDestroy(comm), mscSuccess);
}

// A rank under an executor: its heartbeats and its communicator's operations reach the executor's table.
TEST(CApiHeartbeat, ARankReportsItsStepAndEveryOperationToItsExecutor) {
  megascale::heartbeat::Table table(1);
  table.clear();
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("MEGASCALE_HEARTBEAT", table.environmentValue(0).c_str(), 1);
    execl("/proc/self/exe", "c_api_test", "--gtest_filter=CApiHeartbeat.RankBody", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const megascale::heartbeat::Slot& slot = table.slot(0);
  EXPECT_EQ(slot.step.load(), 7);
  EXPECT_EQ(megascale::heartbeat::unpackName(slot.phase.load()), "backward");
  EXPECT_GE(slot.ops_issued.load(), 1u);
  EXPECT_EQ(slot.ops_completed.load(), slot.ops_issued.load());
  EXPECT_EQ(megascale::heartbeat::unpackName(slot.op_group.load()), "grads");
  EXPECT_EQ(slot.op_kind.load(), static_cast<uint32_t>(megascale::Collective::kAllReduce) + 1);
  EXPECT_EQ(slot.transport_errors.load(), 0u);
}

}  // namespace
