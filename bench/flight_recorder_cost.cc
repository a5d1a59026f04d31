// What the flight recorder costs: every rank (a process under megascale-run) holds two communicators of two
// jobs, one recording and one not (CommunicatorOptions::flight_recorder), and times blocks of all-reduces on
// each in turn (which goes first alternates), so that drift and noise hit both alike. At 8 B (latency) and
// 64 MiB, over the transport MEGASCALE_TRANSPORT names (shm: the node engine; tcp: the schedule executor).
// Rank 0 prints the machine, the median time per operation of each, the median of the rounds' ratios, and the
// recorder's own work per operation measured alone. Targets (issue 37): at most +2% at 8 B; nothing measurable
// at 64 MiB.
//   MEGASCALE_TRANSPORT=shm megascale-run -n 2 build/bench/flight_recorder_cost [--rounds N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/unique_id.h"
#include "collectives/communicator.h"
#include "collectives/flight_recorder.h"
#include "common/config.h"
#include "common/heartbeat.h"

namespace {

using namespace megascale;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Result {
  std::vector<double> on_us, off_us, ratios;  // per round: time per operation, and on / off - 1 (%)
};

// This rank's time per operation in each round, for both communicators.
Result measure(const UniqueId& base, int rank, int size, size_t bytes, int iterations, int rounds) {
  Result result;
  CommunicatorOptions options = CommunicatorOptions::fromEnvironment();
  std::shared_ptr<Communicator> comm[2];  // [0]: recording, [1]: not
  for (int k = 0; k < 2; ++k) {
    UniqueId id = base;
    id.job_id += "." + std::to_string(bytes) + (k == 0 ? ".on" : ".off");
    options.flight_recorder = k == 0;
    comm[k] = Communicator::create(id, rank, size, options);
  }
  std::vector<float> data(std::max<size_t>(1, bytes / sizeof(float)), 1.0f);
  const auto check = [](const Status& s) {
    if (!s.isOk()) {
      std::fprintf(stderr, "flight_recorder_cost: %s\n", s.message().c_str());
      std::exit(1);
    }
  };
  const auto block = [&](Communicator& c, int n) {
    for (int i = 0; i < n; ++i) {
      check(c.allReduce(data.data(), data.data(), data.size(), mscFloat32, mscSum)->wait(std::chrono::seconds(60)));
    }
  };
  for (int k = 0; k < 2; ++k) block(*comm[k], std::max(2, iterations / 10));  // connect, warm up
  for (int round = 0; round < rounds; ++round) {
    double us[2] = {};
    for (int turn = 0; turn < 2; ++turn) {
      const int k = (round + turn) % 2;
      check(comm[1]->barrier()->wait(std::chrono::seconds(60)));
      const auto t0 = Clock::now();
      block(*comm[k], iterations);
      us[k] = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / iterations;
    }
    result.on_us.push_back(us[0]);
    result.off_us.push_back(us[1]);
    result.ratios.push_back(100.0 * (us[0] / us[1] - 1));
  }
  return result;
}

// The recorder's own work for one operation (issued, started, finished), alone, in ns.
double recorderNsPerOperation() {
  flight::Recorder& recorder = flight::Recorder::process();
  flight::GroupLog log;
  log.attach(recorder, recorder.claim(heartbeat::packName("cost"), 0, 2, [](int i) { return i; }));
  constexpr int kOps = 2'000'000;
  const auto t0 = Clock::now();
  for (uint32_t i = 0; i < kOps; ++i) {
    const uint64_t t = log.issued({Collective::kAllReduce, mscFloat32, mscSum, Algorithm::kAuto, -1, 2, i});
    log.started(t, static_cast<uint8_t>(Algorithm::kRing));
    log.finished(t, ErrorCode::kOk);
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / kOps;
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "?";
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
  }
  const char* id_text = std::getenv("MEGASCALE_UNIQUE_ID");
  if (id_text == nullptr) {
    std::fprintf(stderr, "flight_recorder_cost: run it under megascale-run (MEGASCALE_UNIQUE_ID is not set)\n");
    return 2;
  }
  const UniqueId id = UniqueId::parse(id_text);
  const int rank = std::atoi(std::getenv("MEGASCALE_RANK")), size = std::atoi(std::getenv("MEGASCALE_WORLD_SIZE"));
  const std::string transport = config::getString("MEGASCALE_TRANSPORT");
  const double own_ns = rank == 0 ? recorderNsPerOperation() : 0;
  if (rank == 0) {
    std::printf("# flight recorder cost: %s, %u cores; %d ranks (processes), transport %s, float sum all-reduce;\n"
                "# %d rounds, each a block on the recording communicator and one on the other, alternating first\n",
                cpuModel().c_str(), std::thread::hardware_concurrency(), size, transport.c_str(), rounds);
    std::printf("# the recorder's own work per operation (issued, started, finished), alone: %.1f ns\n", own_ns);
    std::printf("%-4s %9s %12s %12s %17s %12s %14s  %s\n", "", "size", "on us/op", "off us/op", "median of rounds",
                "spread (IQR)", "own work/op", "target");
  }
  for (const auto& [bytes, iterations] : {std::pair<size_t, int>{8, 2000}, {size_t{64} << 20, 8}}) {
    const Result r = measure(id, rank, size, bytes, iterations, rounds);
    if (rank != 0) continue;
    const double on = median(r.on_us), off = median(r.off_us), ratio = median(r.ratios);
    // The rounds' spread: at 64 MiB the recorder's ~40 ns is a millionth of an operation, and what the rounds
    // show is noise; "not measurable" means the median is inside it.
    std::vector<double> sorted = r.ratios;
    std::sort(sorted.begin(), sorted.end());
    const double iqr = sorted[sorted.size() * 3 / 4] - sorted[sorted.size() / 4];
    const bool small = bytes == 8, met = small ? ratio <= 2.0 : std::abs(ratio) <= std::max(2.0, iqr / 2);
    std::printf("%-4s %9s %12.2f %12.2f %+16.1f%% %11.1f%% %13.5f%%  %s: %s\n", transport.c_str(), small ? "8 B" : "64 MiB",
                on, off, ratio, iqr, 100.0 * own_ns / 1000 / off,
                small ? "+2% at most" : "not measurable (median within half the spread)", met ? "met" : "MISSED");
    std::fflush(stdout);
  }
  return 0;
}
