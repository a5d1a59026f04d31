// The flight recorder: what a communicator records of each operation, the ring that keeps the last ones, torn
// entries left out, the JSON that carries a record to megascale-diagnose, and the dumps a rank writes itself
// after a timeout and on SIGUSR1 (in a child process, so that the signal handler and the dump directory are
// the child's own).
#include "collectives/flight_recorder.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "collectives/communicator.h"
#include "local_job.h"

namespace megascale::flight {
namespace {

using namespace std::chrono_literals;

const GroupRecord* findGroup(const RankRecord& record, const std::string& name, int rank = -1) {
  for (const GroupRecord& g : record.groups) {
    if (g.name == name && !g.closed && (rank < 0 || g.rank == rank)) return &g;
  }
  return nullptr;
}

GroupLog::Issue collective(Collective kind, uint32_t seq, uint64_t count) {
  return GroupLog::Issue{kind, mscFloat32, mscSum, Algorithm::kAuto, -1, count, seq};
}

TEST(FlightRecorder, RecordsWhatWasIssuedStartedAndFinished) {
  Recorder& recorder = Recorder::process();
  ASSERT_TRUE(recorder.enabled());
  GroupLog log;
  log.attach(recorder, recorder.claim(heartbeat::packName("unit"), 1, 4, [](int i) { return 2 * i; }));
  const uint64_t reduce = log.issued(collective(Collective::kAllReduce, 0, 1024));
  log.started(reduce, static_cast<uint8_t>(Algorithm::kRing));
  log.finished(reduce, ErrorCode::kOk);
  const uint64_t gather = log.issued(collective(Collective::kAllGather, 1, 16));
  log.started(gather, static_cast<uint8_t>(Algorithm::kRing));
  log.waitingFor(gather)->store(2);
  const uint64_t queued = log.issued(collective(Collective::kBroadcast, 2, 8));

  const RankRecord record = recorder.snapshot("test");
  EXPECT_EQ(record.reason, "test");
  EXPECT_EQ(record.pid, getpid());
  const GroupRecord* g = findGroup(record, "unit");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->rank, 1);
  EXPECT_EQ(g->members, (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(g->collectives, 3u);
  ASSERT_EQ(g->ops.size(), 3u);
  EXPECT_EQ(g->ops[0].kind, "all_reduce");
  EXPECT_EQ(g->ops[0].state, "done");
  EXPECT_EQ(g->ops[0].bytes, 4096u);
  EXPECT_EQ(g->ops[0].redop, "sum");
  EXPECT_EQ(g->ops[0].algorithm, "ring");
  EXPECT_GE(g->ops[0].issued_s, g->ops[0].finished_s);
  EXPECT_EQ(g->ops[1].kind, "all_gather");
  EXPECT_EQ(g->ops[1].state, "running");
  EXPECT_EQ(g->ops[1].redop, "");
  EXPECT_EQ(g->ops[1].waiting_for, 4) << "group rank 2 is world rank 4";
  EXPECT_EQ(g->ops[1].finished_s, -1);
  EXPECT_EQ(g->ops[2].state, "queued");
  EXPECT_EQ(g->ops[2].algorithm, "") << "chosen when it starts";
  (void)queued;
}

TEST(FlightRecorder, KeepsTheLastOperationsOldestFirst) {
  Recorder& recorder = Recorder::process();
  GroupLog log;
  log.attach(recorder, recorder.claim(heartbeat::packName("ring"), 0, 2, [](int i) { return i; }));
  for (uint32_t seq = 0; seq < 300; ++seq) log.finished(log.issued(collective(Collective::kAllReduce, seq, 1)), ErrorCode::kOk);
  const RankRecord record = recorder.snapshot("test");
  const GroupRecord* g = findGroup(record, "ring");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->ops.size(), static_cast<size_t>(kEntries));
  EXPECT_EQ(g->ops.front().seq, 300u - kEntries);
  EXPECT_EQ(g->ops.back().seq, 299u);
}

TEST(FlightRecorder, IrregularGroupsListTheirMembersAndSendRecvCountsItsOwn) {
  Recorder& recorder = Recorder::process();
  GroupLog log;
  const std::vector<int> world{5, 1, 7};
  log.attach(recorder, recorder.claim(heartbeat::packName("odd"), 2, 3, [&](int i) { return world[i]; }));
  GroupLog::Issue p2p{Collective::kSendRecv, mscBfloat16, mscSum, Algorithm::kAuto, -1, 10, 99, 2, 0, 1};
  log.issued(p2p);
  log.issued(p2p);
  const RankRecord record = recorder.snapshot("test");
  const GroupRecord* g = findGroup(record, "odd");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->members, world);
  EXPECT_EQ(g->point_to_point, 2u);
  ASSERT_EQ(g->ops.size(), 2u);
  EXPECT_EQ(g->ops[1].seq, 1u) << "send/recv groups are numbered apart from collectives";
  EXPECT_EQ(g->ops[1].kind, "sendrecv");
  EXPECT_EQ(g->ops[1].send_peer, 5);
  EXPECT_EQ(g->ops[1].recv_peer, 1);
  EXPECT_EQ(g->ops[1].bytes, 20u);
}

TEST(FlightRecorder, AnEntryBeingRewrittenIsLeftOut) {
  Recorder& recorder = Recorder::process();
  GroupLog log;
  GroupBlock* block = recorder.claim(heartbeat::packName("torn"), 0, 2, [](int i) { return i; });
  log.attach(recorder, block);
  log.issued(collective(Collective::kAllReduce, 0, 1));
  log.issued(collective(Collective::kAllReduce, 1, 1));
  block->entries[0].version.fetch_add(1);  // as a writer midway through reusing it
  const RankRecord record = recorder.snapshot("test");
  const GroupRecord* g = findGroup(record, "torn");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(g->ops.size(), 1u);
  EXPECT_EQ(g->ops[0].seq, 1u);
}

TEST(FlightRecorder, JsonCarriesTheWholeRecordAndNamesWhatIsMalformed) {
  Recorder& recorder = Recorder::process();
  GroupLog log;
  log.attach(recorder, recorder.claim(heartbeat::packName("json"), 0, 2, [](int i) { return i + 3; }));
  const uint64_t t = log.issued(GroupLog::Issue{Collective::kBroadcast, mscInt32, mscSum, Algorithm::kAuto, 1, 7, 0});
  log.started(t, static_cast<uint8_t>(Algorithm::kBinomialTree));
  log.waitingFor(t)->store(1);
  log.finished(t, ErrorCode::kTimeout);
  RankRecord record = recorder.snapshot("json test");
  record.process = "stopped by a signal";
  record.last_report = "step 3 forward";
  record.stalled_s = 2.5;
  const RankRecord back = rankRecordFromJson(toJson(record));
  EXPECT_EQ(back.pid, record.pid);
  EXPECT_EQ(back.reason, "json test");
  EXPECT_EQ(back.process, record.process);
  EXPECT_EQ(back.last_report, record.last_report);
  EXPECT_EQ(back.stalled_s, 2.5);
  const GroupRecord* g = findGroup(back, "json");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->members, (std::vector<int>{3, 4}));
  ASSERT_EQ(g->ops.size(), 1u);
  EXPECT_EQ(g->ops[0].kind, "broadcast");
  EXPECT_EQ(g->ops[0].root, 1);
  EXPECT_EQ(g->ops[0].state, "failed");
  EXPECT_EQ(g->ops[0].error, errorCodeName(ErrorCode::kTimeout));
  EXPECT_EQ(g->ops[0].waiting_for, 4);
  EXPECT_EQ(g->ops[0].algorithm, "tree");

  for (const std::string& bad : {std::string("not json"), std::string("[]"), std::string("{\"rank\": 1}"),
                                 std::string("{\"rank\": \"one\"}")}) {
    try {
      rankRecordFromJson(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("flight record"), std::string::npos) << e.what();
    }
  }
  std::string no_seq = toJson(record);
  const size_t at = no_seq.find("\"seq\"");
  ASSERT_NE(at, std::string::npos);
  no_seq.replace(at, 5, "\"sex\"");
  try {
    rankRecordFromJson(no_seq);
    ADD_FAILURE() << "accepted an operation without seq";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"seq\""), std::string::npos) << e.what();
  }
}

// Runs body in a child process whose dumps go to a fresh directory; the child's exit status and the directory.
std::pair<int, std::string> inChild(const std::function<int()>& body) {
  char dir[] = "/tmp/flight-test-XXXXXX";
  if (mkdtemp(dir) == nullptr) return {-1, ""};
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("MEGASCALE_FLIGHT_RECORDER_DIR", dir, 1);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status), dir};
}

RankRecord readDump(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return rankRecordFromJson(text.str());
}

TEST(FlightRecorder, CommunicatorsRecordTheirOperationsAndATimeoutDumpsThem) {
  const auto [status, dir] = inChild([] {
    test_support::LocalJob job;
    CommunicatorOptions options;
    options.timeout = 600ms;
    options.transport = "tcp";  // the schedule executor, which names the peer it waits for
    std::atomic<int> failures{0};
    std::atomic<bool> gave_up{false};
    job.runRanks(2, options, [&](int r, const std::shared_ptr<Communicator>& comm) {
      comm->setName("pair");
      std::vector<float> data(256, 1.0f);
      if (!comm->allReduce(data.data(), data.data(), data.size(), mscFloat32, mscSum)->wait(20s).isOk()) ++failures;
      // Rank 1 skips the second all-reduce: rank 0 times out waiting for it.
      if (r == 0) {
        flight::Recorder::process().setCoordinates("tp 0 pp 0 dp 0");
        const Status timed_out = comm->allReduce(data.data(), data.data(), 3, mscFloat32, mscMax)->wait(20s);
        if (timed_out.code() != ErrorCode::kTimeout) ++failures;
        // The error names the group, its members and this rank's coordinates, besides the operation and peer.
        if (timed_out.message().find("receive from rank 1") == std::string::npos ||
            timed_out.message().find("[group pair of 2: world ranks 0, 1; this rank: tp 0 pp 0 dp 0]") ==
                std::string::npos) {
          std::fprintf(stderr, "the timeout's message lacks its scope: %s\n", timed_out.message().c_str());
          ++failures;
        }
        gave_up = true;
      } else {
        while (!gave_up) std::this_thread::sleep_for(10ms);
      }
    });
    return failures.load();
  });
  ASSERT_EQ(status, 0);
  // Both ranks are threads of one process: the record is the process's, named by whichever rank joined first.
  std::string path;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) path = entry.path().string();
  ASSERT_TRUE(path.ends_with(".json")) << "no dump in " << dir;
  const RankRecord record = readDump(path);
  EXPECT_NE(record.reason.find("timeout in all_reduce"), std::string::npos) << record.reason;
  EXPECT_NE(record.reason.find("pair"), std::string::npos) << record.reason;
  const GroupRecord* mine = findGroup(record, "pair", 0);
  ASSERT_NE(mine, nullptr) << toJson(record);
  ASSERT_EQ(mine->ops.size(), 2u);
  EXPECT_EQ(mine->ops[0].state, "done");
  EXPECT_EQ(mine->ops[0].count, 256u);
  EXPECT_EQ(mine->ops[1].state, "failed");
  EXPECT_EQ(mine->ops[1].redop, "max");
  EXPECT_EQ(mine->ops[1].waiting_for, 1) << toJson(record);
  const GroupRecord* theirs = findGroup(record, "pair", 1);
  ASSERT_NE(theirs, nullptr);
  EXPECT_EQ(theirs->collectives, 1u) << "rank 1 never issued the second all-reduce";
  std::filesystem::remove_all(dir);
}

// The record shows the algorithm each operation ran, as chosen when it started: an all-to-all of one float on
// 8 ranks of one host takes pairwise over shared memory, where a message costs about what Bruck's packing copies
// do, and Bruck over sockets (MEGASCALE_TRANSPORT=tcp), where the chooser prices the ranks' link as the network's.
// Over shared memory the all-reduce is the node engine's, as the hierarchical row's one-host schedule ("hier").
TEST(FlightRecorder, RecordsTheAlgorithmChosenOnTheTransportInUse) {
  for (const auto& [transport, all_to_all] : {std::pair{"shm", "pairwise"}, std::pair{"tcp", "bruck"}}) {
    test_support::LocalJob job;
    CommunicatorOptions options;
    options.transport = transport;
    options.flight_recorder = true;
    const std::string name = std::string("a2a") + transport;
    std::atomic<int> failures{0};
    job.runRanks(8, options, [&](int r, const std::shared_ptr<Communicator>& comm) {
      comm->setName(name);
      std::vector<float> in(8, static_cast<float>(r)), out(8);
      if (!comm->allToAll(in.data(), out.data(), 1, mscFloat32)->wait(20s).isOk()) ++failures;
      for (int from = 0; from < 8; ++from) failures += out[static_cast<size_t>(from)] != static_cast<float>(from);
      float sum = static_cast<float>(r);
      if (!comm->allReduce(&sum, &sum, 1, mscFloat32, mscSum)->wait(20s).isOk() || sum != 28) ++failures;
      if (r != 0) return;
      const RankRecord record = Recorder::process().snapshot("test");
      const GroupRecord* g = findGroup(record, name, 0);
      const bool shm = std::string(transport) == "shm";
      if (g == nullptr || g->ops.size() != 2 || g->ops[0].algorithm != all_to_all ||
          (g->ops[1].algorithm == "hier") != shm) {
        std::fprintf(stderr, "%s: expected %s, then %s; recorded %s, %s\n", transport, all_to_all,
                     shm ? "hier" : "a flat all-reduce", g == nullptr || g->ops.empty() ? "nothing" : g->ops[0].algorithm.c_str(),
                     g == nullptr || g->ops.size() < 2 ? "nothing" : g->ops[1].algorithm.c_str());
        ++failures;
      }
    });
    EXPECT_EQ(failures.load(), 0) << transport;
  }
}

TEST(FlightRecorder, SigusrOneDumpsTheRecord) {
  const auto [status, dir] = inChild([] {
    test_support::LocalJob job;
    auto comm = Communicator::create(job.id, 0, 1, CommunicatorOptions{});
    float x = 1;
    if (!comm->allReduce(&x, &x, 1, mscFloat32, mscSum)->wait(20s).isOk()) return 1;
    raise(SIGUSR1);
    const char* dir = std::getenv("MEGASCALE_FLIGHT_RECORDER_DIR");
    for (int i = 0; i < 500; ++i) {
      if (std::filesystem::exists(std::string(dir) + "/rank-00000.json")) return 0;
      std::this_thread::sleep_for(10ms);
    }
    return 2;
  });
  ASSERT_EQ(status, 0) << "the process died of SIGUSR1 or wrote nothing";
  const RankRecord record = readDump(dir + "/rank-00000.json");
  EXPECT_EQ(record.reason, "SIGUSR1");
  EXPECT_EQ(record.rank, 0);
  const GroupRecord* world = findGroup(record, "world");
  ASSERT_NE(world, nullptr);
  ASSERT_FALSE(world->ops.empty());
  EXPECT_EQ(world->ops.back().state, "done");
  std::filesystem::remove_all(dir);
}

TEST(FlightRecorder, OffRecordsNothing) {
  const auto [status, dir] = inChild([] {
    setenv("MEGASCALE_FLIGHT_RECORDER", "0", 1);
    return Recorder::process().enabled() ? 1 : 0;
  });
  EXPECT_EQ(status, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace megascale::flight
