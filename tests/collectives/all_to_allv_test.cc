// Communicator::allToAllv (and mscAllToAllv): unequal and empty blocks land where the displacements say, in
// place of nothing else; bad arrays are clear errors; a peer that sends another size than expected is a mismatch.
#include <gtest/gtest.h>

#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "local_job.h"
#include "megascale/megascale.h"

namespace megascale {
namespace {

using namespace std::chrono_literals;

void runRanks(const test_support::LocalJob& job, int n, const std::function<void(int, Communicator&)>& body) {
  CommunicatorOptions o;
  o.timeout = 5s;
  o.transport = "tcp";
  job.runRanks(n, o, [&](int r, const std::shared_ptr<Communicator>& comm) { body(r, *comm); });
}

// Rank r sends rank p (r + p) % 3 elements (empty blocks too), value 1000 r + 10 p + j; blocks sit in reverse
// order of ranks with a gap of one element between them, so that displacements, not counts, place them.
size_t blockOf(int from, int to) { return static_cast<size_t>((from + to) % 3); }

TEST(AllToAllv, UnequalBlocksLandAtTheirDisplacements) {
  test_support::LocalJob job;
  const int n = 4;
  runRanks(job, n, [&](int rank, Communicator& comm) {
    std::vector<size_t> send_counts(n), send_displs(n), recv_counts(n), recv_displs(n);
    size_t send_at = 0, recv_at = 0;
    for (int p = n - 1; p >= 0; --p) {
      send_counts[p] = blockOf(rank, p);
      recv_counts[p] = blockOf(p, rank);
      send_displs[p] = send_at;
      recv_displs[p] = recv_at;
      send_at += send_counts[p] + 1;
      recv_at += recv_counts[p] + 1;
    }
    std::vector<int32_t> in(send_at, -1), out(recv_at, -7);
    for (int p = 0; p < n; ++p) {
      for (size_t j = 0; j < send_counts[p]; ++j) in[send_displs[p] + j] = 1000 * rank + 10 * p + static_cast<int32_t>(j);
    }
    Status s = comm.allToAllv(in.data(), send_counts.data(), send_displs.data(), out.data(), recv_counts.data(),
                              recv_displs.data(), mscInt32)->wait(10s);
    ASSERT_TRUE(s.isOk()) << s.message();
    for (int p = 0; p < n; ++p) {
      for (size_t j = 0; j < recv_counts[p]; ++j) {
        EXPECT_EQ(out[recv_displs[p] + j], 1000 * p + 10 * rank + static_cast<int32_t>(j)) << "rank " << rank << " from " << p;
      }
      EXPECT_EQ(out[recv_displs[p] + recv_counts[p]], -7) << "the gap after rank " << p << "'s block was written";
    }
  });
}

TEST(AllToAllv, BadArraysAreErrorsNamingTheRank) {
  test_support::LocalJob job;
  runRanks(job, 1, [&](int, Communicator& comm) {
    size_t one[1] = {1}, zero[1] = {0}, two[1] = {2}, huge[1] = {SIZE_MAX / 2};
    float in[2] = {1, 2}, out[2] = {};
    auto message = [&](auto&& call) {
      try {
        call();
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
        return std::string(e.what());
      }
      return std::string("no error");
    };
    EXPECT_NE(message([&] { comm.allToAllv(in, nullptr, zero, out, one, zero, mscFloat32); }).find("null"), std::string::npos);
    EXPECT_NE(message([&] { comm.allToAllv(in, one, zero, out, two, zero, mscFloat32); }).find("sends itself 1 elements but receives 2"),
              std::string::npos);
    EXPECT_NE(message([&] { comm.allToAllv(in, huge, zero, out, huge, zero, mscFloat32); }).find("overflows"), std::string::npos);
    EXPECT_NE(message([&] { comm.allToAllv(nullptr, one, zero, out, one, zero, mscFloat32); }).find("null send buffer"),
              std::string::npos);
    EXPECT_NE(message([&] { comm.allToAllv(in, one, zero, out, one, zero, static_cast<mscDataType_t>(77)); }).find("rank 0"),
              std::string::npos);
    // One rank: its own block is a local copy.
    ASSERT_TRUE(comm.allToAllv(in, two, zero, out, two, zero, mscFloat32)->wait(5s).isOk());
    EXPECT_EQ(out[1], 2.0f);
  });
}

TEST(AllToAllv, ASizeThePeerDoesNotExpectIsAMismatch) {
  test_support::LocalJob job;
  std::vector<Status> results(2);
  runRanks(job, 2, [&](int rank, Communicator& comm) {
    // Rank 0 sends 3 elements to rank 1, which expects 2.
    size_t send_counts[2] = {1, rank == 0 ? size_t{3} : size_t{1}}, recv_counts[2] = {1, 1};
    if (rank == 1) {
      send_counts[0] = 1;
      send_counts[1] = 1;
      recv_counts[0] = 2;
    }
    size_t send_displs[2] = {0, 1}, recv_displs[2] = {0, 2};
    std::vector<float> in(4, 1.0f), out(4);
    results[static_cast<size_t>(rank)] = comm.allToAllv(in.data(), send_counts, send_displs, out.data(), recv_counts,
                                                        recv_displs, mscFloat32)->wait(10s);
  });
  EXPECT_EQ(results[1].code(), ErrorCode::kMismatch) << results[1].message();
  EXPECT_NE(results[1].message().find("all_to_allv"), std::string::npos) << results[1].message();
}

TEST(AllToAllv, TheCApiReturnsCodes) {
  mscUniqueId id;
  ASSERT_EQ(mscGetUniqueId(&id), mscSuccess);
  mscComm_t comm = nullptr;
  ASSERT_EQ(mscCommInitRank(&comm, 1, id, 0), mscSuccess) << mscGetLastError();
  size_t one[1] = {1}, zero[1] = {0};
  double in = 4, out = 0;
  EXPECT_EQ(mscAllToAllv(&in, one, zero, &out, nullptr, zero, mscFloat64, comm), mscInvalidArgument);
  EXPECT_NE(std::string(mscGetLastError()).find("all_to_allv: rank 0"), std::string::npos) << mscGetLastError();
  // In a group the arrays are read at the call, not at mscGroupEnd.
  size_t counts[1] = {1};
  ASSERT_EQ(mscGroupStart(), mscSuccess);
  ASSERT_EQ(mscAllToAllv(&in, counts, zero, &out, counts, zero, mscFloat64, comm), mscSuccess);
  counts[0] = 5;
  ASSERT_EQ(mscGroupEnd(), mscSuccess) << mscGetLastError();
  ASSERT_EQ(mscCommSynchronize(comm), mscSuccess);
  ASSERT_EQ(mscAllToAllv(&in, one, zero, &out, one, zero, mscFloat64, comm), mscSuccess) << mscGetLastError();
  ASSERT_EQ(mscCommSynchronize(comm), mscSuccess);
  EXPECT_EQ(out, 4.0);
  EXPECT_EQ(mscCommDestroy(comm), mscSuccess);
}

}  // namespace
}  // namespace megascale
