// The node engine's data paths, each forced by its options, with ranks as threads of one process (the
// multi-process runs are collective_check's): one-shot, combining, slot rounds and cross-memory attach (with
// and without non-temporal stores), every collective the engine runs, in and out of place, bit-identical
// results on all ranks; plus the region's identity checks.
#include "collectives/node/node_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "local_job.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

TEST(RegionIdentity, RoundTripsAndRejectsMalformedText) {
  node::RegionIdentity id{1234, 7, 0xfeedfacecafebeefULL, 1 << 20};
  node::RegionIdentity back;
  ASSERT_TRUE(node::RegionIdentity::parse(id.toString(), &back));
  EXPECT_EQ(back.pid, id.pid);
  EXPECT_EQ(back.fd, id.fd);
  EXPECT_EQ(back.token, id.token);
  EXPECT_EQ(back.bytes, id.bytes);
  for (const char* bad : {"", "1,2,3", "1,2,zz,4096", "-1,2,ab,4096", "1,-2,ab,4096", "1,2,ab,10", "1,2,ab,4096x"}) {
    EXPECT_FALSE(node::RegionIdentity::parse(bad, &back)) << bad;
  }
}

TEST(Region, AttachChecksTheTokenAndTheProcess) {
  auto own = node::Region::create(0, 4096);
  std::unique_ptr<node::Region> peer;
  ASSERT_TRUE(node::Region::attach(own->identity(), 0, &peer).isOk());
  EXPECT_EQ(peer->header()->token, own->header()->token);
  own->slot(1)[0] = 42;  // the same memory through both mappings
  EXPECT_EQ(peer->slot(1)[0], 42);
  EXPECT_FALSE(peer->ownerExited());

  node::RegionIdentity forged = own->identity();
  forged.token ^= 1;
  Status s = node::Region::attach(forged, 3, &peer);
  EXPECT_EQ(s.code(), ErrorCode::kPeerLost);
  EXPECT_NE(s.message().find("rank 3"), std::string::npos) << s.message();

  node::RegionIdentity closed = own->identity();
  closed.fd = 100000;  // no such descriptor
  s = node::Region::attach(closed, 1, &peer);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("MEGASCALE_SHM_COLLECTIVES"), std::string::npos) << s.message();
}

struct Path {
  const char* name;
  std::function<void(node::NodeOptions&)> set;
};

// Printed by its name: GoogleTest would print its bytes (pointers), and ctest's test names would change each build.
void PrintTo(const Path& path, std::ostream* os) { *os << path.name; }

class NodePathTest : public ::testing::TestWithParam<Path> {
 protected:

  void runRanks(int n, const std::function<void(int, Communicator&)>& body) {
    CommunicatorOptions o;
    o.timeout = 20s;
    o.transport = "shm";
    o.transport_options.handshake_timeout_ms = 20000;
    GetParam().set(o.node);
    job_.runRanks(n, o, [&](int r, const std::shared_ptr<Communicator>& comm) { body(r, *comm); });
  }

  test_support::LocalJob job_;
  UniqueId& id_ = job_.id;
};

// Inputs whose float sums depend on the order of addition, so ranks that reduced differently would differ.
float input(int rank, size_t i) { return static_cast<float>(std::sin(0.37 * static_cast<double>(i) + rank)) * 1e3f; }

TEST_P(NodePathTest, AllReduceIsCorrectAndIdenticalOnEveryRank) {
  constexpr int kRanks = 3;
  std::vector<std::vector<std::vector<float>>> results(kRanks);
  runRanks(kRanks, [&](int rank, Communicator& comm) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{70001}}) {
      std::vector<float> in(count), out(count, -1.0f), inplace(count);
      for (size_t i = 0; i < count; ++i) inplace[i] = in[i] = input(rank, i);
      ASSERT_TRUE(comm.allReduce(in.data(), out.data(), count, mscFloat32, mscSum)->wait(20s).isOk());
      ASSERT_TRUE(comm.allReduce(inplace.data(), inplace.data(), count, mscFloat32, mscSum)->wait(20s).isOk());
      EXPECT_EQ(out, inplace);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_NEAR(out[i], input(0, i) + input(1, i) + input(2, i), 1e-2) << "element " << i;
      }
      std::vector<int32_t> ints(count, rank + 1), avg(count);
      ASSERT_TRUE(comm.allReduce(ints.data(), avg.data(), count, mscInt32, mscAvg)->wait(20s).isOk());
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(avg[i], 2);
      results[rank].push_back(out);
    }
  });
  EXPECT_EQ(results[0], results[1]);
  EXPECT_EQ(results[0], results[2]);
}

TEST_P(NodePathTest, AllGatherAndReduceScatterInAndOutOfPlace) {
  constexpr int kRanks = 3;
  runRanks(kRanks, [&](int rank, Communicator& comm) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{777}, size_t{70001}}) {
      std::vector<int64_t> in(count), gathered(count * kRanks, -1), place(count * kRanks, -1);
      for (size_t i = 0; i < count; ++i) in[i] = rank * 1000003LL + static_cast<int64_t>(i);
      std::copy(in.begin(), in.end(), place.begin() + static_cast<ptrdiff_t>(rank * count));
      ASSERT_TRUE(comm.allGather(in.data(), gathered.data(), count, mscInt64)->wait(20s).isOk());
      ASSERT_TRUE(comm.allGather(place.data() + rank * count, place.data(), count, mscInt64)->wait(20s).isOk());
      for (int q = 0; q < kRanks; ++q) {
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(gathered[q * count + i], q * 1000003LL + static_cast<int64_t>(i));
      }
      EXPECT_EQ(gathered, place);

      std::vector<int64_t> full(count * kRanks), out(count, -1);
      for (size_t i = 0; i < full.size(); ++i) full[i] = (rank + 1) * static_cast<int64_t>(i);
      ASSERT_TRUE(comm.reduceScatter(full.data(), out.data(), count, mscInt64, mscSum)->wait(20s).isOk());
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[i], 6 * static_cast<int64_t>(rank * count + i));
      ASSERT_TRUE(comm.reduceScatter(full.data(), full.data() + rank * count, count, mscInt64, mscMax)->wait(20s).isOk());
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(full[rank * count + i], 3 * static_cast<int64_t>(rank * count + i));
    }
  });
}

TEST_P(NodePathTest, RanksThatDisagreeOnTheCountFailWithMismatch) {
  runRanks(2, [&](int rank, Communicator& comm) {
    std::vector<float> buf(rank == 0 ? 100 : 200, 1.0f);
    ASSERT_TRUE(comm.allReduce(buf.data(), buf.data(), 1, mscFloat32, mscSum)->wait(20s).isOk());  // connects
    Status s = comm.allReduce(buf.data(), buf.data(), buf.size(), mscFloat32, mscSum)->wait(20s);
    EXPECT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("rank " + std::to_string(rank)), std::string::npos) << s.message();
  });
}

const Path kPaths[] = {
    {"one_shot", [](node::NodeOptions& o) { o.combine = 0; }},
    {"combining", [](node::NodeOptions& o) { o.combine = 1; }},
    {"slot_rounds",
     [](node::NodeOptions& o) {
       o.slot_bytes = 4096;
       o.one_shot_max = 0;
       o.cma_min = SIZE_MAX;
       o.cma_min_gather = SIZE_MAX;
     }},
    {"cross_memory",
     [](node::NodeOptions& o) {
       o.one_shot_max = 0;
       o.cma_min = 0;
       o.cma_min_gather = 0;
       o.stream_min = SIZE_MAX;
       o.chunk_bytes = 4096;
     }},
    {"cross_memory_streaming",
     [](node::NodeOptions& o) {
       o.one_shot_max = 0;
       o.cma_min = 0;
       o.cma_min_gather = 0;
       o.stream_min = 0;
       o.chunk_bytes = 4096;
     }},
};

INSTANTIATE_TEST_SUITE_P(Paths, NodePathTest, ::testing::ValuesIn(kPaths),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace megascale
