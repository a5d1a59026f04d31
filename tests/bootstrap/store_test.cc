// One suite every store backend passes: the tcp store and Redis.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "bootstrap/store_fixture.h"
#include "common/status.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

class StoreSuite : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "tcp") backend_ = std::make_unique<testing::TcpBackend>();
    else backend_ = std::make_unique<testing::RedisBackend>();
    if (!backend_->unavailable().empty()) GTEST_SKIP() << backend_->unavailable();
  }
  std::unique_ptr<Store> connect(const std::string& who = "rank 0") {
    return connectStore(backend_->id(), who, 10s);
  }
  std::unique_ptr<testing::StoreBackend> backend_;
};

TEST_P(StoreSuite, SetThenGet) {
  auto store = connect();
  store->set("a", std::string("va\0lue", 6));
  EXPECT_EQ(store->get("a", 1s), std::string("va\0lue", 6));
  store->set("a", "");
  EXPECT_EQ(store->get("a", 1s), "");
}

TEST_P(StoreSuite, GetWaitsForALaterSet) {
  auto reader = connect("rank 1");
  auto writer = connect("rank 0");
  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    writer->set("late", "here");
  });
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(reader->get("late", 5s), "here");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 90ms);
  t.join();
}

TEST_P(StoreSuite, GetTimesOutNamingKeyAndRank) {
  auto store = connect("rank 7");
  auto start = std::chrono::steady_clock::now();
  try {
    store->get("never", 200ms);
    FAIL() << "get returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    std::string what = e.what();
    EXPECT_NE(what.find("never"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 7"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  store->set("after", "1");  // the connection is still usable after a timeout
  EXPECT_EQ(store->get("after", 1s), "1");
}

TEST_P(StoreSuite, WaitForSeveralKeys) {
  auto store = connect();
  store->set("k1", "1");
  EXPECT_THROW(store->wait({"k1", "k2"}, 100ms), Error);
  store->set("k2", "2");
  store->wait({"k1", "k2"}, 1s);
}

TEST_P(StoreSuite, AddIsAtomicAcrossClients) {
  constexpr int kClients = 8, kAdds = 50;
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      auto store = connect("rank " + std::to_string(c));
      for (int i = 0; i < kAdds; ++i) store->add("counter", 1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(connect()->add("counter", 0), kClients * kAdds);
  EXPECT_EQ(connect()->add("counter", -5), kClients * kAdds - 5);
}

TEST_P(StoreSuite, CompareSetSemantics) {
  auto store = connect();
  EXPECT_EQ(store->compareSet("c", "", "first"), "first");  // absent matches empty
  EXPECT_EQ(store->compareSet("c", "wrong", "second"), "first");
  EXPECT_EQ(store->compareSet("c", "first", "second"), "second");
  EXPECT_EQ(store->compareSet("absent", "x", "y"), "");  // absent, expected not empty: no change
  EXPECT_THROW(store->get("absent", 50ms), Error);
}

TEST_P(StoreSuite, DeleteKey) {
  auto store = connect();
  store->set("d", "1");
  EXPECT_TRUE(store->deleteKey("d"));
  EXPECT_FALSE(store->deleteKey("d"));
  EXPECT_THROW(store->get("d", 50ms), Error);
}

TEST_P(StoreSuite, WrongSecretIsRefusedAndCannotTouchKeys) {
  auto good = connect();
  good->set("private", "data");
  UniqueId forged = backend_->id();
  forged.secret[0] ^= 1;
  try {
    auto bad = connectStore(forged, "rank 3", 2s);
    bad->get("private", 100ms);
    FAIL() << "a client with the wrong secret read a key";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kAuthFailed) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(good->get("private", 1s), "data");
}

TEST_P(StoreSuite, JobsAreIsolatedByJobId) {
  UniqueId other = backend_->id();
  other.job_id = "another-job";
  auto a = connect();
  auto b = connectStore(other, "rank 0", 5s);
  a->set("shared-name", "job-a");
  EXPECT_THROW(b->get("shared-name", 50ms), Error);
  b->set("shared-name", "job-b");
  EXPECT_EQ(a->get("shared-name", 1s), "job-a");
}

TEST_P(StoreSuite, MultiSetAndMultiGetInOneCall) {
  auto writer = connect("rank 0");
  auto reader = connect("rank 1");
  writer->multiSet({{"m/0", "zero"}, {"m/1", std::string("o\0ne", 4)}, {"m/2", ""}});
  EXPECT_EQ(reader->multiGet({"m/2", "m/0", "m/1"}, 1s), (std::vector<std::string>{"", "zero", std::string("o\0ne", 4)}));
  std::thread late([&] {
    std::this_thread::sleep_for(50ms);
    writer->set("m/3", "three");
  });
  EXPECT_EQ(reader->multiGet({"m/0", "m/3"}, 5s), (std::vector<std::string>{"zero", "three"}));  // waits for the missing one
  late.join();
  try {
    reader->multiGet({"m/0", "m/never"}, 100ms);
    FAIL() << "multiGet returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTimeout);
    EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
  }
}

TEST_P(StoreSuite, ThreadsShareOneClientAndAWaitingGetHoldsUpNoOne) {
  auto shared = connect("process 0");
  std::atomic<bool> got{false};
  std::thread waiter([&] { got = shared->get("later", 10s) == "now"; });
  std::this_thread::sleep_for(50ms);
  // While one thread's get waits on the same client, 8 threads' requests go through it.
  std::vector<std::thread> busy;
  for (int t = 0; t < 8; ++t) {
    busy.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string key = "t" + std::to_string(t) + "/" + std::to_string(i);
        shared->set(key, key);
        EXPECT_EQ(shared->get(key, 1s), key);
        shared->add("count", 1);
      }
    });
  }
  for (auto& b : busy) b.join();
  EXPECT_FALSE(got.load());
  EXPECT_EQ(shared->add("count", 0), 400);
  shared->set("later", "now");
  waiter.join();
  EXPECT_TRUE(got.load());
}

TEST_P(StoreSuite, DeadStoreGivesAnErrorNotAHang) {
  auto store = connect();
  store->set("x", "1");
  backend_->kill();
  auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(store->get("y", 1s), Error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreSuite, ::testing::Values("tcp", "redis"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace megascale
