#include "trainer/data/host_data.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <mutex>
#include <string>

#include <unistd.h>

#include "trainer/rank_threads.h"

namespace megascale::trainer {
namespace {

using namespace std::chrono_literals;

// This process's data segments (the name carries the loader's pid): ctest runs other tests' processes beside
// this one, and their segments are not ours to count.
int shmEntries() {
  const std::string ours = "megascale-data-" + std::to_string(getpid()) + "-";
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    n += entry.path().filename().string().rfind(ours, 0) == 0;
  }
  return n;
}

TEST(LoadOncePerHost, TheFirstRankLoadsAndTheOthersMapItsTokens) {
  std::atomic<int> loads{0};
  const Tokenizer bpe = Tokenizer::trainBpe("abab abab abcabc abcabc", 260);
  std::mutex mutex;
  std::vector<TrainingData> got(3);
  testing::runRanks(3, [&](int rank, std::shared_ptr<Communicator> comm) {
    TrainingData data = loadOncePerHost(*comm, 30s, [&] {
      ++loads;
      TrainingData d;
      d.tokenizer = bpe;
      d.vocab = bpe.vocabSize();
      d.description = "test text";
      d.tokens = std::make_shared<const TokenStore>(bpe.encode("abab abcabc abab"));
      return d;
    });
    std::lock_guard lock(mutex);
    got[static_cast<size_t>(rank)] = std::move(data);
  });
  EXPECT_EQ(loads.load(), 1);
  const std::vector<int32_t> want = bpe.encode("abab abcabc abab");
  for (const TrainingData& d : got) {
    EXPECT_EQ(std::vector<int32_t>(d.tokens->begin(), d.tokens->end()), want);
    EXPECT_EQ(d.vocab, bpe.vocabSize());
    EXPECT_EQ(d.tokenizer.decode(want), "abab abcabc abab");  // the tokenizer travelled too
  }
  EXPECT_NE(got[1].description.find("mapped from the host's loader"), std::string::npos);
  EXPECT_EQ(shmEntries(), 0) << "the segment's name is gone once every rank mapped it";
}

TEST(LoadOncePerHost, AFailedLoadFailsEveryRankWithItsMessage) {
  std::atomic<int> failures{0};
  testing::runRanks(2, [&](int, std::shared_ptr<Communicator> comm) {
    try {
      loadOncePerHost(*comm, 30s, []() -> TrainingData { throw std::runtime_error("cannot open training text x.txt"); });
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "cannot open training text x.txt");
      ++failures;
    }
  });
  EXPECT_EQ(failures.load(), 2);
  EXPECT_EQ(shmEntries(), 0);
}

}  // namespace
}  // namespace megascale::trainer
