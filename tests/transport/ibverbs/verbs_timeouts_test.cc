// MEGASCALE_IB_TIMEOUT / MEGASCALE_IB_RETRY_CNT arithmetic: NCCL's meaning (4.096 us x 2^timeout a try), and the
// defaults that ride out a link flap of a given length.
#include "transport/ibverbs/verbs_timeouts.h"

#include <gtest/gtest.h>

namespace megascale::transport {
namespace {

TEST(VerbsTimeouts, AckTimeoutIs4096NanosecondsTimesAPowerOfTwo) {
  EXPECT_EQ(verbsAckTimeout(0), kNever);
  EXPECT_EQ(verbsAckTimeout(1), 8192 * kNanosecond);
  EXPECT_EQ(verbsAckTimeout(14), 67'108'864 * kNanosecond);  // NCCL's old default: 67 ms
  EXPECT_EQ(verbsAckTimeout(20), 4'294'967'296 * kNanosecond);  // NCCL's current default: 4.3 s
  EXPECT_EQ(verbsGiveUpAfter(VerbsRetry{20, 7, 7, 12}), 8 * verbsAckTimeout(20));  // ~34 s
}

TEST(VerbsTimeouts, TheSmallestTimeoutWhoseEightTriesCoverTheOutage) {
  const VerbsRetry five = verbsRetryFor(5 * kSecond);  // 8 x 0.54 s < 5 s <= 8 x 1.07 s
  EXPECT_EQ(five.timeout, 18);
  EXPECT_EQ(five.retry_cnt, 7);
  EXPECT_EQ(five.rnr_retry, 7);
  EXPECT_GE(verbsGiveUpAfter(five), 5 * kSecond);
  EXPECT_LT(verbsGiveUpAfter(VerbsRetry{17, 7, 7, 12}), 5 * kSecond);
  EXPECT_EQ(verbsRetryFor(1 * kMicrosecond).timeout, 1);
  EXPECT_EQ(verbsRetryFor(kNever / 2).timeout, 31);
}

}  // namespace
}  // namespace megascale::transport
