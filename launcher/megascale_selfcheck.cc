// megascale-selfcheck: the checks MegaScale runs on suspect hosts, as a job of its own under megascale-run (the
// driver runs it after a fault with --self-check). Every rank checks its GEMM; each host's ranks all-reduce;
// one rank per host exchanges with the neighbouring hosts. Rank 0 prints one line per check with pass or fail
// and the figure, flags ranks and links much slower than their peers by host name, and ends with a verdict.
// Exit status (on every rank): 0 when everything passed, 3 when everything was right but a rank or link was much
// slower than its peers (flagged by name), 1 when a check failed, 2 for bad arguments.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "common/config.h"
#include "launcher/rank_watch.h"
#include "launcher/self_checks.h"
#include "topology/host_record.h"

namespace {

using namespace megascale;

struct Options {
  int64_t gemm_size = 512;
  double gemm_seconds = 0.25;
  size_t allreduce_bytes = 8 << 20;
  size_t link_bytes = 8 << 20;
  int repeats = 5;
  double slow_fraction = 0.5;
};

void usage(FILE* out) {
  std::fprintf(out,
               "usage: megascale-run -n N megascale-selfcheck [options]\n"
               "  --gemm-size N       GEMM of N x N x N (default 512)\n"
               "  --gemm-seconds S    how long each rank times it, one rank of a host at a time (default 0.25)\n"
               "  --allreduce-mib M   the host all-reduce's size (default 8)\n"
               "  --link-mib M        what each host sends its neighbour (default 8)\n"
               "  --slow-fraction F   flag a rank or link below F x the median of its peers (default 0.5)\n");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      usage(stdout);
      std::exit(0);
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "megascale-selfcheck: %s needs a value\n", a.c_str());
      std::exit(2);
    }
    char* end = nullptr;
    const double v = std::strtod(argv[++i], &end);
    const bool bad = *end != '\0' || !(v > 0) || v > 1e6;
    if (bad || (a != "--gemm-size" && a != "--gemm-seconds" && a != "--allreduce-mib" && a != "--link-mib" &&
                a != "--slow-fraction")) {
      std::fprintf(stderr, "megascale-selfcheck: bad option %s %s\n", a.c_str(), argv[i]);
      usage(stderr);
      std::exit(2);
    }
    if (a == "--gemm-size") o.gemm_size = static_cast<int64_t>(v);
    if (a == "--gemm-seconds") o.gemm_seconds = v;
    if (a == "--allreduce-mib") o.allreduce_bytes = static_cast<size_t>(v * (1 << 20));
    if (a == "--link-mib") o.link_bytes = static_cast<size_t>(v * (1 << 20));
    if (a == "--slow-fraction") o.slow_fraction = v;
  }
  return o;
}

// What every rank tells rank 0 about one check.
struct Report {
  int32_t ran = 0;
  int32_t pass = 0;
  double figure = 0;
  char host[64] = {};
  char detail[160] = {};
};

Report reportOf(const launcher::CheckResult& r, const std::string& host) {
  Report out;
  out.ran = 1;
  out.pass = r.pass ? 1 : 0;
  out.figure = r.figure;
  std::snprintf(out.host, sizeof(out.host), "%s", host.c_str());
  std::snprintf(out.detail, sizeof(out.detail), "%s", r.detail.c_str());
  return out;
}

std::vector<Report> gather(Communicator& world, const Report& mine, std::chrono::milliseconds timeout) {
  std::vector<Report> all(static_cast<size_t>(world.size()));
  const Status s = world.allGather(&mine, all.data(), sizeof(Report), mscUint8)->wait(timeout);
  if (!s.isOk()) throw Error(s.code(), "gathering the self-check reports: " + s.message());
  return all;
}

enum class Outcome { kPass = 0, kSlow = 1, kFail = 2 };

// Prints one check's lines on rank 0; returns the worst outcome of any rank.
Outcome printCheck(const char* name, const char* unit, const std::vector<Report>& all, double slow_fraction,
                const char* subject, std::vector<std::string>& problems) {
  std::vector<double> figures;
  std::vector<size_t> who;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].ran && all[r].pass) {
      figures.push_back(all[r].figure);
      who.push_back(r);
    }
  }
  std::vector<bool> slow(all.size(), false);
  for (size_t i : launcher::slowerThanPeers(figures, slow_fraction)) slow[who[i]] = true;
  Outcome worst = Outcome::kPass;
  for (size_t r = 0; r < all.size(); ++r) {
    const Report& p = all[r];
    if (!p.ran) continue;
    const char* verdict = !p.pass ? "FAIL" : slow[r] ? "SLOW" : "PASS";
    std::printf("%-9s %s of rank %zu (host %s): %s %.2f %s, %s\n", name, subject, r, p.host, verdict, p.figure, unit,
                p.detail);
    if (!p.pass || slow[r]) {
      worst = std::max(worst, p.pass ? Outcome::kSlow : Outcome::kFail);
      problems.push_back(std::string(name) + " on host " + p.host + " (rank " + std::to_string(r) +
                         "): " + (p.pass ? "much slower than its peers" : p.detail));
    }
  }
  return worst;
}

}  // namespace

using launcher::kExitSlow;

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    const CommunicatorOptions comm_options = CommunicatorOptions::fromEnvironment();
    auto world = Communicator::createFromEnvironment(comm_options);
    const auto timeout = comm_options.timeout;
    const std::string host = topology::thisHostName();
    const int local = world->localRank();
    auto host_ranks = world->split(local >= 0 ? world->rank() - local : world->rank(), world->rank());
    host_ranks->setName("host");
    auto leaders = world->split(local <= 0 ? 0 : MSC_SPLIT_NOCOLOR, world->rank());
    if (leaders) leaders->setName("hosts");

    // One rank of a host at a time, so that each rank's GEMM has the host's cores and the rates compare.
    launcher::CheckResult own_gemm;
    for (int turn = 0; turn < host_ranks->size(); ++turn) {
      if (turn == host_ranks->rank()) own_gemm = launcher::checkGemm(o.gemm_size, o.gemm_seconds);
      const Status s = host_ranks->barrier()->wait(timeout);
      if (!s.isOk()) throw Error(s.code(), "taking turns at the GEMM check: " + s.message());
    }
    const auto gemm = gather(*world, reportOf(own_gemm, host), timeout);
    const auto reduce = gather(
        *world, reportOf(launcher::checkAllReduce(*host_ranks, o.allreduce_bytes, o.repeats, timeout), host), timeout);
    Report link{};
    if (leaders && leaders->size() > 1) {
      link = reportOf(launcher::checkNeighbourLink(*leaders, o.link_bytes, o.repeats, timeout), host);
    }
    const auto links = gather(*world, link, timeout);

    std::vector<std::string> problems;
    Outcome worst = Outcome::kPass;
    if (world->rank() == 0) {
      int hosts = 0;
      for (const Report& r : links) hosts += r.ran;
      std::printf("megascale-selfcheck: %d ranks on %d host(s)\n", world->size(), std::max(hosts, 1));
      worst = std::max(worst, printCheck("gemm", "GFLOP/s", gemm, o.slow_fraction, "GEMM", problems));
      worst = std::max(worst, printCheck("allreduce", "GB/s busbw", reduce, o.slow_fraction, "host all-reduce", problems));
      if (hosts > 1) {
        worst = std::max(worst,
                         printCheck("link", "GB/s", links, o.slow_fraction, "link from the previous host to", problems));
      } else {
        std::printf("link      one host: no neighbouring host to check\n");
      }
      std::printf("verdict: %s", worst == Outcome::kPass   ? "PASS"
                                 : worst == Outcome::kSlow ? "PASS, flagged SLOW:"
                                                           : "FAIL:");
      for (const std::string& p : problems) std::printf(" %s;", p.c_str());
      std::printf("\n");
      std::fflush(stdout);
    }
    int verdict = worst == Outcome::kPass ? 0 : worst == Outcome::kSlow ? kExitSlow : 1;
    const Status s = world->broadcast(&verdict, &verdict, 1, mscInt32, 0)->wait(timeout);
    if (!s.isOk()) throw Error(s.code(), "sharing the verdict: " + s.message());
    return verdict;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megascale-selfcheck: %s\n", e.what());
    return 1;
  }
}
