// The diagnosis on made-up flight records of an 8-rank tp2 x dp2 x pp2 job: the rank that never entered the
// collective its group waits in, followed through ranks that wait on waiting ranks; a stopped rank inside the
// operation; a rank outside any collective; a mismatch of sizes named as the program's bug; nothing wrong.
#include "launcher/diagnosis.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace megascale::launcher {
namespace {

using flight::GroupRecord;
using flight::OpRecord;
using flight::RankRecord;

OpRecord op(uint32_t seq, const std::string& state, double started_s, uint64_t bytes = 4096,
            const std::string& kind = "all_reduce") {
  OpRecord o;
  o.seq = seq;
  o.kind = kind;
  o.dtype = "float";
  o.redop = kind == "all_reduce" ? "sum" : "";
  o.count = bytes / 4;
  o.bytes = bytes;
  o.state = state;
  o.issued_s = started_s + 0.001;
  o.started_s = state == "queued" ? -1 : started_s;
  o.finished_s = state == "done" ? 0.5 : -1;
  return o;
}

// tp groups {0,1}, {2,3}, ...; dp groups {0,2}, {1,3}, {4,6}, {5,7}; pp groups {0,4}, {1,5}, {2,6}, {3,7}.
struct Job {
  std::vector<RankRecord> ranks;
  Job() {
    for (int r = 0; r < 8; ++r) {
      RankRecord rec;
      rec.rank = r;
      rec.host = "h" + std::to_string(r / 4);
      rec.coordinates = "tp " + std::to_string(r % 2) + " dp " + std::to_string((r / 2) % 2) + " pp " + std::to_string(r / 4);
      rec.process = "running";
      rec.groups.push_back(group("tp", {r - r % 2, r - r % 2 + 1}, r));
      const int dp_first = (r / 4) * 4 + r % 2;
      rec.groups.push_back(group("dp", {dp_first, dp_first + 2}, r));
      rec.groups.push_back(group("pp", {r % 4, r % 4 + 4}, r));
      ranks.push_back(rec);
    }
  }
  static GroupRecord group(const std::string& name, std::vector<int> members, int me) {
    GroupRecord g;
    g.name = name;
    g.size = static_cast<int>(members.size());
    g.rank = members[0] == me ? 0 : 1;
    g.members = std::move(members);
    return g;
  }
  GroupRecord& of(int rank, const std::string& name) {
    for (GroupRecord& g : ranks[rank].groups) {
      if (g.name == name) return g;
    }
    throw std::logic_error("no group " + name);
  }
  // Every rank finished `done` collectives in the group; then those in `waiting` issued one more and wait in it.
  void collectives(const std::string& name, uint32_t done, const std::vector<int>& waiting, double for_s) {
    for (RankRecord& r : ranks) {
      GroupRecord& g = of(r.rank, name);
      for (uint32_t s = 0; s < done; ++s) g.ops.push_back(op(s, "done", 1.0));
      g.collectives = done;
    }
    for (int w : waiting) {
      GroupRecord& g = of(w, name);
      g.ops.push_back(op(done, "running", for_s));
      g.collectives = done + 1;
    }
  }
};

TEST(Diagnosis, NamesTheRankThatNeverEnteredTheCollectiveItsGroupWaitsIn) {
  Job job;
  job.collectives("tp", 5, {}, 0);
  job.collectives("dp", 3, {1}, 12.3);  // rank 3, rank 1's dp peer, never came
  job.ranks[3].process = "stopped by a signal";
  job.ranks[3].last_report = "step 12 forward";
  const Diagnosis d = diagnose(job.ranks);
  EXPECT_EQ(d.kind, Diagnosis::Kind::kHang);
  EXPECT_EQ(d.culprits, std::vector<int>{3});
  EXPECT_EQ(d.verdict,
            "rank 3 (host h0, tp 1 dp 1 pp 0) never entered all_reduce #3 of dp group 1 (ranks 1, 3); rank 1 waits in it "
            "for 12.3 s (stopped by a signal; last report: step 12 forward)");
}

TEST(Diagnosis, FollowsWaitsThroughRanksThatWaitThemselves) {
  Job job;
  // Rank 5 waits in pp for rank 1; rank 1 waits in tp for rank 0, which is outside any collective.
  job.collectives("pp", 2, {5}, 4.0);
  job.collectives("tp", 7, {1}, 3.0);
  job.ranks[0].last_report = "step 4 backward";
  const Diagnosis d = diagnose(job.ranks);
  EXPECT_EQ(d.kind, Diagnosis::Kind::kHang);
  EXPECT_EQ(d.culprits, std::vector<int>{0});
  EXPECT_NE(d.verdict.find("rank 0 (host h0, tp 0 dp 0 pp 0) never entered all_reduce #7 of tp group 0 (ranks 0, 1); "
                           "rank 1 waits in it for 3.0 s (outside any collective; last report: step 4 backward); 1 more rank "
                           "waits behind them"),
            std::string::npos)
      << d.verdict;
  bool five_listed = false;
  for (const std::string& line : d.detail) five_listed = five_listed || line.rfind("rank 5 (host h1", 0) == 0;
  EXPECT_TRUE(five_listed) << "the detail lists every waiting rank";
}

TEST(Diagnosis, AStoppedRankInsideTheOperationHoldsItUp) {
  Job job;
  job.collectives("tp", 4, {2, 3}, 6.0);  // both entered; rank 3 was stopped inside it
  job.ranks[3].process = "stopped by a signal";
  const Diagnosis d = diagnose(job.ranks);
  EXPECT_EQ(d.culprits, std::vector<int>{3});
  EXPECT_NE(d.verdict.find("rank 3 (host h0, tp 1 dp 1 pp 0) holds up all_reduce #4 of tp group 1 (ranks 2, 3); rank 2 "
                           "waits in it for 6.0 s (stopped by a signal)"),
            std::string::npos)
      << d.verdict;
}

TEST(Diagnosis, ARankThatDiedIsNamedThoughItsPeersOperationsHaveFailed) {
  Job job;
  job.collectives("dp", 6, {0}, 0.8);  // rank 0 waited in dp #6 for rank 2, which was killed; then it failed
  OpRecord& failed = job.of(0, "dp").ops.back();
  failed.state = "failed";
  failed.error = "peer lost";
  failed.finished_s = 0.3;
  job.ranks[2].process = "was killed by signal 9 (Killed)";
  const Diagnosis d = diagnose(job.ranks);
  EXPECT_EQ(d.culprits, std::vector<int>{2});
  EXPECT_NE(d.verdict.find("rank 2 (host h0, tp 0 dp 1 pp 0) never entered all_reduce #6 of dp group 0 (ranks 0, 2); "
                           "rank 0 waits in it for 0.5 s (was killed by signal 9 (Killed))"),
            std::string::npos)
      << d.verdict;
  EXPECT_NE(d.detail.back().find("failed (peer lost) in all_reduce #6"), std::string::npos) << d.detail.back();
}

TEST(Diagnosis, APointToPointWaitFollowsThePeerItsRunNames) {
  Job job;
  GroupRecord& g = job.of(6, "pp");
  OpRecord recv = op(0, "running", 2.0, 64, "sendrecv");
  recv.redop = "";
  recv.recv_peer = 2;
  g.ops.push_back(recv);
  g.point_to_point = 1;
  const Diagnosis d = diagnose(job.ranks);
  EXPECT_EQ(d.culprits, std::vector<int>{2});
  EXPECT_NE(d.verdict.find("rank 2 (host h0"), std::string::npos) << d.verdict;
  EXPECT_NE(d.verdict.find("sendrecv #0 of pp group 2 (ranks 2, 6)"), std::string::npos) << d.verdict;
}

TEST(Diagnosis, RanksCallingDifferentSizesAreAMismatchNotAHang) {
  Job job;
  job.collectives("tp", 2, {}, 0);
  // World all-gather #88: ranks 0-2 with 8192 B, rank 3 with 4096 B (a 4-rank group of its own).
  for (int r = 0; r < 4; ++r) {
    GroupRecord g = Job::group("world4", {0, 1, 2, 3}, r);
    g.rank = r;
    g.size = 4;
    g.ops.push_back(op(88, "running", 5.0, r == 3 ? 4096 : 8192, "all_gather"));
    g.collectives = 89;
    job.ranks[r].groups.push_back(g);
  }
  const Diagnosis d = diagnose(job.ranks);
  EXPECT_EQ(d.kind, Diagnosis::Kind::kMismatch);
  EXPECT_EQ(d.culprits, std::vector<int>{3});
  EXPECT_EQ(d.verdict,
            "mismatch (a bug in the program, not a fault of the machines) in world4 (ranks 0-3): rank 3 called all_gather "
            "#88 with 4096 B (1024 x float); ranks 0-2 called all_gather #88 with 8192 B (2048 x float)");
}

TEST(Diagnosis, NothingWrongSaysSo) {
  Job job;
  job.collectives("tp", 3, {}, 0);
  const Diagnosis d = diagnose(job.ranks);
  EXPECT_EQ(d.kind, Diagnosis::Kind::kNothing);
  EXPECT_TRUE(d.culprits.empty());
  EXPECT_EQ(d.verdict, "no rank is waiting in an operation");
}

}  // namespace
}  // namespace megascale::launcher
