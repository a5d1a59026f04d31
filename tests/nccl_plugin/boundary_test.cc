// The plugin's exception boundary: whatever an entry point throws, NCCL gets a code and one report.
#include "nccl_plugin/boundary.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace megascale::nccl_plugin {
namespace {

struct Reports {
  std::vector<std::string> lines;
  auto sink() {
    return [this](const char* op, const char* message) { lines.push_back(std::string(op) + ": " + message); };
  }
};

template <typename Throw>
nccl_abi::Result throwing(Reports& reports, Throw&& thrower) {
  return callGuarded(
      "accept",
      [&]() -> nccl_abi::Result {
        thrower();
        return nccl_abi::kSuccess;
      },
      reports.sink());
}

TEST(PluginBoundary, ResultPassesThroughWithoutReport) {
  Reports reports;
  EXPECT_EQ(callGuarded(
                "isend", [] { return nccl_abi::kInvalidUsage; }, reports.sink()),
            nccl_abi::kInvalidUsage);
  EXPECT_TRUE(reports.lines.empty());
}

TEST(PluginBoundary, TypedErrorsMapToNcclCodesAndAreReportedOnce) {
  Reports reports;
  EXPECT_EQ(throwing(reports, [] { throw Error(ErrorCode::kPeerLost, "peer 3 closed"); }), nccl_abi::kSystemError);
  EXPECT_EQ(throwing(reports, [] { throw Error(ErrorCode::kMismatch, "8 bytes into 4"); }), nccl_abi::kInvalidUsage);
  EXPECT_EQ(throwing(reports, [] { throw Error(ErrorCode::kInvalidArgument, "bad"); }), nccl_abi::kInvalidArgument);
  EXPECT_EQ(throwing(reports, [] { throw Error(ErrorCode::kInternal, "bug"); }), nccl_abi::kInternalError);
  ASSERT_EQ(reports.lines.size(), 4u);
  EXPECT_EQ(reports.lines[0], "accept: peer 3 closed");
}

TEST(PluginBoundary, AllocationFailureAndForeignExceptionsNeverEscape) {
  Reports reports;
  EXPECT_EQ(throwing(reports, [] { throw std::bad_alloc(); }), nccl_abi::kSystemError);
  EXPECT_EQ(throwing(reports, [] { throw std::out_of_range("vector::at"); }), nccl_abi::kInternalError);
  EXPECT_EQ(throwing(reports, [] { throw 42; }), nccl_abi::kInternalError);
  ASSERT_EQ(reports.lines.size(), 3u);
  EXPECT_EQ(reports.lines[0], "accept: out of memory");
  EXPECT_EQ(reports.lines[1], "accept: vector::at");
  EXPECT_EQ(reports.lines[2], "accept: unknown exception");
}

TEST(PluginBoundary, EveryErrorCodeHasAnNcclCode) {
  for (int c = 1; c <= static_cast<int>(ErrorCode::kUnavailable); ++c) {
    nccl_abi::Result r = resultFor(static_cast<ErrorCode>(c));
    EXPECT_NE(r, nccl_abi::kSuccess) << errorCodeName(static_cast<ErrorCode>(c));
  }
  EXPECT_EQ(resultFor(ErrorCode::kTimeout), nccl_abi::kSystemError);
  EXPECT_EQ(resultFor(ErrorCode::kAuthFailed), nccl_abi::kSystemError);
}

}  // namespace
}  // namespace megascale::nccl_plugin
