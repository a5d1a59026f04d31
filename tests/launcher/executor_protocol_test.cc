// What executors and the driver write into the store reads back as written; anything else is refused, naming the
// key, never half-read.
#include "launcher/executor_protocol.h"

#include <gtest/gtest.h>

#include "common/status.h"

namespace megascale::launcher {
namespace {

TEST(ExecutorProtocol, InfoRoundTrips) {
  const ExecutorInfo info{"rack 3 host", 8, "10.0.0.7:41234", 2};
  const ExecutorInfo back = decodeExecutorInfo(encodeExecutorInfo(info), "driver/exec/0");
  EXPECT_EQ(back.host, "rack 3 host");
  EXPECT_EQ(back.nproc, 8);
  EXPECT_EQ(back.replica_address, "10.0.0.7:41234");
  EXPECT_EQ(back.preferred_slot, 2);
}

TEST(ExecutorProtocol, ReportRoundTripsWithEveryRank) {
  ExecutorReport report;
  report.seq = 77;
  report.attempt = 3;
  report.state = ExecutorReport::State::kStopped;
  report.self_check = ExecutorReport::Check::kFailed;
  report.link_check = ExecutorReport::Check::kPassed;
  report.link_peer = 2;
  report.link_kbps = 1171875;
  RankSample a;
  a.rank = 4;
  a.running = false;
  a.wait_status = 9;
  a.progress = 1234567890123ull;
  a.transport_errors = 2;
  a.beats = 5;
  a.where = "step 12 forward, in all_reduce #40 of dp";
  a.step = 12;
  a.phase = "forward";
  a.coordinates = "tp 1 pp 0 dp 2";
  a.operation = "all_reduce #40 of dp (running)";
  a.in_operation_s = 1.25;
  RankSample b;
  b.rank = 5;
  b.stopped = true;
  b.in_collective = true;
  b.where = "";
  report.ranks = {a, b};
  const ExecutorReport back = decodeReport(encodeReport(report), "driver/beat/1");
  EXPECT_EQ(back.seq, 77u);
  EXPECT_EQ(back.attempt, 3);
  EXPECT_EQ(back.state, ExecutorReport::State::kStopped);
  EXPECT_EQ(back.self_check, ExecutorReport::Check::kFailed);
  EXPECT_EQ(back.link_check, ExecutorReport::Check::kPassed);
  EXPECT_EQ(back.link_peer, 2);
  EXPECT_EQ(back.link_kbps, 1171875u);
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_EQ(back.ranks[0].rank, 4);
  EXPECT_FALSE(back.ranks[0].running);
  EXPECT_EQ(back.ranks[0].wait_status, 9);
  EXPECT_EQ(back.ranks[0].progress, 1234567890123ull);
  EXPECT_EQ(back.ranks[0].transport_errors, 2u);
  EXPECT_EQ(back.ranks[0].beats, 5u);
  EXPECT_EQ(back.ranks[0].where, a.where);
  EXPECT_EQ(back.ranks[0].step, 12);
  EXPECT_EQ(back.ranks[0].phase, "forward");
  EXPECT_EQ(back.ranks[0].coordinates, a.coordinates);
  EXPECT_EQ(back.ranks[0].operation, a.operation);
  EXPECT_DOUBLE_EQ(back.ranks[0].in_operation_s, 1.25);
  EXPECT_EQ(back.ranks[1].step, -1);
  EXPECT_EQ(back.ranks[1].in_operation_s, -1);
  EXPECT_TRUE(back.ranks[1].stopped);
  EXPECT_TRUE(back.ranks[1].in_collective);
  EXPECT_EQ(back.ranks[1].where, "");
}

TEST(ExecutorProtocol, MessagesRoundTrip) {
  DriverMessage run;
  run.attempt = 2;
  run.slots = {0, 4, 2};
  run.replica_sources = {-1, 2, -1};
  const DriverMessage r = decodeMessage(encodeMessage(run), "driver/message/1");
  EXPECT_EQ(r.kind, DriverMessage::Kind::kRun);
  EXPECT_EQ(r.attempt, 2);
  EXPECT_EQ(r.slots, run.slots);
  EXPECT_EQ(r.replica_sources, run.replica_sources);

  DriverMessage stop;
  stop.kind = DriverMessage::Kind::kStop;
  stop.attempt = 1;
  stop.kill = {3, 7};
  stop.self_check = true;
  const DriverMessage s = decodeMessage(encodeMessage(stop), "driver/message/2");
  EXPECT_EQ(s.kind, DriverMessage::Kind::kStop);
  EXPECT_EQ(s.kill, stop.kill);
  EXPECT_TRUE(s.self_check);

  DriverMessage links;
  links.kind = DriverMessage::Kind::kLinks;
  links.attempt = 4;
  links.slots = {0, 5, 2};
  const DriverMessage l = decodeMessage(encodeMessage(links), "driver/message/3");
  EXPECT_EQ(l.kind, DriverMessage::Kind::kLinks);
  EXPECT_EQ(l.attempt, 4);
  EXPECT_EQ(l.slots, links.slots);

  DriverMessage end;
  end.kind = DriverMessage::Kind::kEnd;
  end.exit_code = 137;
  end.summary = "rank 3 (host h1) was killed by signal 9";
  const DriverMessage e = decodeMessage(encodeMessage(end), "driver/message/3");
  EXPECT_EQ(e.kind, DriverMessage::Kind::kEnd);
  EXPECT_EQ(e.exit_code, 137);
  EXPECT_EQ(e.summary, end.summary);
}

// Every value a broken or hostile writer might leave: truncated, padded, out of range, of the wrong kind.
TEST(ExecutorProtocol, MalformedValuesAreRefusedNamingTheKey) {
  ExecutorReport report;
  report.ranks.resize(2);
  const std::string good = encodeReport(report);
  const std::vector<std::string> bad = {
      "",
      "report",
      good.substr(0, good.size() - 3),
      good + " 1",
      "report 1 0 9 0 0 0 -1 0 0",          // an unknown state
      "report 1 0 0 0 0 3 -1 0 0",          // an unknown link check
      "report 1 0 0 0 0 1 -2 0 0",          // no such link peer
      "report 1 0 0 0 0 0 -1 0 -1",         // a negative count
      "report 1 0 0 0 0 0 -1 0 99999999",   // more ranks than allowed
      "report x 0 0 0 0 0 -1 0 0",
      "report 1 0 0 0 0 0 -1 0 1 0 1 0 0 1 5 0 0 0 99999:abc",  // a text longer than the value
  };
  for (const std::string& text : bad) {
    try {
      decodeReport(text, "driver/beat/3");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("driver/beat/3"), std::string::npos) << e.what();
    }
  }
  for (const std::string& text : {std::string("run 1 0 0"), std::string("run 1 2 0 1 1 5"),
                                  std::string("stop 1 2 0"), std::string("end 300 0:"), std::string("launch 1"),
                                  std::string("end 0 4:ab"), std::string("links 1 1 0"), std::string("links 1 2 0")}) {
    EXPECT_THROW(decodeMessage(text, "driver/message/1"), Error) << text;
  }
  EXPECT_THROW(decodeExecutorInfo("host 2:h1 nproc 0 replicas 0: slot -1", "driver/exec/1"), Error);
}

}  // namespace
}  // namespace megascale::launcher
