// One checkpoint slot in host memory: written in place through its mapping, stamped instead of checksummed. A copy
// taken while the writer runs (what a replicator does) is either whole or refused as torn, never a mix; hostile
// headers are refused without reading out of bounds; a slot of another size starts over.
#include "trainer/checkpoint/rank_slot_file.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

namespace megascale::trainer {
namespace {

std::string fresh(const char* name) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::filesystem::remove(path);
  return path;
}

RankSlotHeader headerAt(int64_t step, uint64_t state_bytes) {
  return RankSlotHeader{"model=y\n", TrainingState{step, step * 3, {step + 0ull, 2, 3, 4}}, step + 7, state_bytes};
}

std::string bytesOf(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void putBytes(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(RankSlotFile, WritesInPlaceAndReadsBackWhole) {
  const std::string path = fresh("slot_roundtrip.ckpt");
  const std::vector<float> a{1, 2, 3}, b{-4.5f};
  const std::vector<std::string_view> pieces{{reinterpret_cast<const char*>(a.data()), 12},
                                             {reinterpret_cast<const char*>(b.data()), 4}};
  RankSlotWriter writer(path, 8, 16);
  EXPECT_TRUE(writer.fits(8, 16));
  EXPECT_FALSE(writer.fits(8, 20));
  writer.write(11, headerAt(5, 16), pieces);
  std::vector<float> state;
  RankSlotRead read = readRankSlot(path, &state);
  ASSERT_TRUE(read.intact) << read.problem;
  EXPECT_EQ(read.header.shape, "model=y\n");
  EXPECT_EQ(read.header.state.step, 5);
  EXPECT_EQ(read.header.state.data_position, 15);
  EXPECT_EQ(read.header.state.rng[0], 5u);
  EXPECT_EQ(read.header.optimizer_steps, 12);
  EXPECT_EQ(state, (std::vector<float>{1, 2, 3, -4.5f}));
  writer.write(12, headerAt(6, 16), pieces);  // the same pages again
  EXPECT_EQ(readRankSlot(path).header.state.step, 6);
  EXPECT_EQ(std::filesystem::file_size(path), 4096u + 16 + 8);
  EXPECT_THROW(writer.write(13, headerAt(7, 12), {pieces[0]}), std::logic_error);
}

TEST(RankSlotFile, AStateOfAnotherSizeStartsTheSlotOver) {
  const std::string path = fresh("slot_resize.ckpt");
  const std::vector<float> big(3000, 1.0f), small(5, 2.0f);
  RankSlotWriter(path, 8, 12000).write(21, headerAt(1, 12000), {{reinterpret_cast<const char*>(big.data()), 12000}});
  RankSlotWriter smaller(path, 8, 20);
  EXPECT_FALSE(readRankSlot(path).intact);  // emptied: the old stamps are gone with the old size
  smaller.write(22, headerAt(2, 20), {{reinterpret_cast<const char*>(small.data()), 20}});
  std::vector<float> state;
  ASSERT_TRUE(readRankSlot(path, &state).intact);
  EXPECT_EQ(state, small);
}

// The writer rewrites one slot as fast as it can, every float of the state equal to the step; the reader copies
// the file as a replicator does. Every copy that reads as intact must hold one step's state whole.
TEST(RankSlotFile, ACopyTakenDuringAWriteIsWholeOrRefusedAsTorn) {
  const std::string path = fresh("slot_race.ckpt"), copy = fresh("slot_race_copy.ckpt");
  constexpr size_t kFloats = 1 << 18;  // 1 MiB: a copy takes long enough to overlap writes
  std::atomic<bool> stop{false};
  RankSlotWriter writer(path, 8, kFloats * sizeof(float));
  std::vector<float> values(kFloats, 0.0f);
  writer.write(1, headerAt(0, kFloats * sizeof(float)), {{reinterpret_cast<const char*>(values.data()), kFloats * 4}});
  std::thread writing([&] {
    for (int64_t step = 1; !stop.load(); ++step) {
      std::fill(values.begin(), values.end(), static_cast<float>(step));
      writer.write(static_cast<uint64_t>(step) + 1, headerAt(step, kFloats * sizeof(float)),
                   {{reinterpret_cast<const char*>(values.data()), kFloats * sizeof(float)}});
      if (step % 4 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // quiet spells too
    }
  });
  int whole = 0, torn = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
  while (std::chrono::steady_clock::now() < until || whole == 0) {
    std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
    std::vector<float> state;
    const RankSlotRead read = readRankSlot(copy, &state);
    if (!read.intact) {
      EXPECT_NE(read.problem.find("torn"), std::string::npos) << read.problem;
      ++torn;
      continue;
    }
    ++whole;
    const auto step = static_cast<float>(read.header.state.step);
    ASSERT_EQ(std::count(state.begin(), state.end(), step), static_cast<long>(kFloats))
        << "a copy read as whole mixes steps (header step " << step << ")";
  }
  stop = true;
  writing.join();
  EXPECT_GT(whole, 0);
  std::printf("copies: %d whole, %d refused as torn\n", whole, torn);
}

TEST(RankSlotFile, RefusesHostileAndDamagedHeadersNamingTheFile) {
  const std::string path = fresh("slot_hostile.ckpt"), bad = fresh("slot_hostile_bad.ckpt");
  const std::vector<float> a(4, 1.0f);
  RankSlotWriter(path, 8, 16).write(9, headerAt(3, 16), {{reinterpret_cast<const char*>(a.data()), 16}});
  const std::string good = bytesOf(path);
  const auto expectRefused = [&](size_t at, const std::string& patch, const char* fragment) {
    std::string bytes = good;
    bytes.replace(at, patch.size(), patch);
    putBytes(bad, bytes);
    const RankSlotRead read = readRankSlot(bad);
    EXPECT_FALSE(read.intact);
    EXPECT_NE(read.problem.find(fragment), std::string::npos) << read.problem;
    EXPECT_NE(read.problem.find(bad), std::string::npos) << read.problem;
  };
  const auto u64 = [](uint64_t v) { return std::string(reinterpret_cast<const char*>(&v), 8); };
  const auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  expectRefused(0, "XXXXXXXX", "not a megascale rank checkpoint slot");
  expectRefused(8, u32(7), "format version 7");
  expectRefused(24, u64(~0ull - 3), "malformed");          // a state size that would wrap the sum
  expectRefused(24, u64(20), "malformed");                 // one that does not match the file's
  expectRefused(12, u32(0), "malformed");
  expectRefused(88, u32(0xffffffffu), "malformed");         // a shape longer than its header
  expectRefused(16, u64(0), "torn");                        // never committed
  expectRefused(good.size() - 8, u64(10), "torn");          // a newer write under way
  putBytes(bad, good.substr(0, 50));
  EXPECT_NE(readRankSlot(bad).problem.find("truncated"), std::string::npos);
  putBytes(bad, good.substr(0, good.size() - 4));
  EXPECT_NE(readRankSlot(bad).problem.find("malformed"), std::string::npos);
  EXPECT_NE(readRankSlot(fresh("missing.ckpt")).problem.find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace megascale::trainer
