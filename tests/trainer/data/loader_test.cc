#include "trainer/data/loader.h"

#include <gtest/gtest.h>

#include <numeric>

namespace megascale::trainer {
namespace {

std::shared_ptr<const TokenStore> ramp(int n) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return std::make_shared<const TokenStore>(std::move(v));
}

TEST(DataLoader, ConsecutiveWindowsWithShiftedTargetsThenWrap) {
  auto tokens = ramp(50);
  DataLoader loader(tokens, 2, 5);  // 10 tokens a batch; 50 tokens hold 4 batches (each needs one more)
  for (int64_t expected_start : {0, 10, 20, 30, 0, 10}) {
    Batch b = loader.next();
    EXPECT_EQ(b.position, expected_start);
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(b.inputs[i], expected_start + i);
      EXPECT_EQ(b.targets[i], expected_start + i + 1);
    }
    EXPECT_EQ(loader.position(), DataLoader::advance(50, 2, 5, expected_start));
  }
}

TEST(DataLoader, StartingAtASavedPositionGivesTheSameBatches) {
  auto tokens = ramp(100);
  DataLoader first(tokens, 3, 4);
  first.next();
  first.next();
  const int64_t saved = first.position();
  std::vector<Batch> expected{first.next(), first.next(), first.next()};
  DataLoader resumed(tokens, 3, 4, saved);
  for (const Batch& e : expected) EXPECT_EQ(resumed.next().inputs, e.inputs);
}

TEST(DataLoader, TooLittleDataOrABadPositionIsRefused) {
  EXPECT_THROW(DataLoader(ramp(10), 2, 5), std::invalid_argument);  // needs 11
  EXPECT_NO_THROW(DataLoader(ramp(11), 2, 5));
  EXPECT_THROW(DataLoader(ramp(50), 2, 5, 45), std::invalid_argument);
  EXPECT_THROW(DataLoader(ramp(50), 2, 5, -1), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::trainer
