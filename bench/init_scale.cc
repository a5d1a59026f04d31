// init_scale: how long a job of N ranks takes to become ready, on the real code path, with N up to 16,384 on
// one machine. Ready means: connected to the store over its own connection, address published, world
// communicator made with its own TCP listener, the trainer's tensor/data/pipeline groups made
// (trainer::ProcessGroups, as megascale-train makes them), and an 8-byte all-reduce completed in the world and
// in each of its TP, PP and DP groups (each connects its ring there), every sum checked.
//
// Simulated ranks: the ranks are spread over --processes worker processes (a simulated host of 8 ranks
// listens on a loopback address of its own). Per rank: its own store client connection (authenticated, as a
// process of its own would open; --shared-store gives the processes' ranks one connection, the previous
// figures' setup), its own world communicator and groups (MEGASCALE_TRANSPORT=tcp, the path between hosts).
// Shared within a process: the creator threads that call the rank's init, the progress engine's thread that
// runs the ranks' operations (as it runs every network communicator of a real process), and the process's
// memory. The store server (tcp) runs in this parent process; redis runs as a redis-server child.
//
// Prints the time to the last rank ready, percentiles, store operations and bytes per rank, and the store's
// peak connections and open descriptors. Last line: "init_scale: ranks N seconds S".
#include <dirent.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench/init_scale_store.h"
#include "bootstrap/store.h"
#include "bootstrap/tcp_store_server.h"
#include "collectives/communicator.h"
#include "common/log.h"
#include "testbed/redis_server.h"
#include "trainer/parallel/process_groups.h"

namespace megascale::bench {
namespace {

// The groups after the world, in the order init_scale reports them: tp, pp, dp.
constexpr trainer::ParallelAxis kGroupAxes[3] = {trainer::ParallelAxis::kTensor, trainer::ParallelAxis::kPipeline,
                                                 trainer::ParallelAxis::kData};

using Clock = std::chrono::steady_clock;

struct Args {
  int ranks = 1024;
  int tp = 8;
  int pp = 4;
  std::string store = "tcp";
  int processes = 0;       // 0: one per 2,048 ranks, at least 2
  int creator_threads = 4;  // per process
  int timeout_ms = 120000;
  bool shared_store = false;  // one store connection per process instead of per rank
  bool group_all_reduce = true;  // the 8 B all-reduces in world, TP, PP, DP (off: one ring exchange on the world)
  std::set<std::string> groups{"world", "tp", "pp", "dp"};  // where they run
  bool store_only = false;  // the store work alone: publish, read the four groups' next ranks (the baseline's)
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "init_scale: %s\n"
               "usage: init_scale --ranks N [--tp T] [--pp P] [--store tcp|redis] [--processes K] [--threads C]\n"
               "                  [--timeout-ms MS] [--shared-store] [--world-ring-only] [--groups world,tp,pp,dp]\n"
               "                  [--store-only]\n",
               why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--shared-store") {
      a.shared_store = true;
      continue;
    }
    if (flag == "--store-only") {
      a.store_only = true;
      continue;
    }
    if (flag == "--world-ring-only") {
      a.group_all_reduce = false;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value for " + flag).c_str());
    const std::string value = argv[++i];
    auto number = [&] {
      char* end = nullptr;
      const long v = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || v < 0 || v > 1 << 20) usage((flag + " needs a whole number, got '" + value + "'").c_str());
      return static_cast<int>(v);
    };
    if (flag == "--ranks") a.ranks = number();
    else if (flag == "--tp") a.tp = number();
    else if (flag == "--pp") a.pp = number();
    else if (flag == "--store") a.store = value;
    else if (flag == "--processes") a.processes = number();
    else if (flag == "--threads") a.creator_threads = number();
    else if (flag == "--timeout-ms") a.timeout_ms = number();
    else if (flag == "--groups") {
      a.groups.clear();
      for (size_t at = 0; at <= value.size();) {
        const size_t comma = std::min(value.find(',', at), value.size());
        const std::string name = value.substr(at, comma - at);
        if (name != "world" && name != "tp" && name != "pp" && name != "dp") usage(("unknown group '" + name + "'").c_str());
        a.groups.insert(name);
        at = comma + 1;
      }
    }
    else usage(("unknown flag " + flag).c_str());
  }
  if (a.ranks < 2) usage("--ranks must be at least 2");
  if (a.store != "tcp" && a.store != "redis") usage("--store is tcp or redis");
  if (a.tp < 1 || a.pp < 1 || a.ranks % (a.tp * a.pp) != 0) usage("--tp x --pp must divide --ranks");
  // A rank holds its store connection, its listener and a connection per peer in each group (an 8 B all-reduce
  // goes direct to every peer of a small group: 31 in a DP group of 32), both ends in this process when the peer
  // is: 128 ranks per process stay under a process's descriptor limit (20,000 here).
  if (a.processes == 0) a.processes = std::max(2, (a.ranks + 127) / 128);
  a.processes = std::min(a.processes, a.ranks);
  if (a.creator_threads < 1) usage("--threads must be at least 1");
  return a;
}

// What a worker process sends back per rank.
struct RankResult {
  int32_t rank;
  int32_t ok;             // the ring exchange delivered the neighbour's value
  double ready_s;         // since the start signal
  uint64_t store_ops;
  uint64_t store_bytes;
};

// How long a process waits for another (the start signal, the results): a rank's own wait, and a minute more.
std::chrono::milliseconds processWait(const Args& args) { return std::chrono::milliseconds(args.timeout_ms) + std::chrono::minutes(1); }

// The store server holds a connection per rank: as root the hard limit is raised too (to 2^20, the kernel's
// default nr_open), otherwise the soft limit goes up to the hard one.
void raiseFileLimit() {
  rlimit lim{1 << 20, 1 << 20};
  if (setrlimit(RLIMIT_NOFILE, &lim) == 0) return;
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);
}

// One worker process: ranks [first, last). Waits for the start time on `parent` (a socket), reports on it.
[[noreturn]] void runWorker(const Args& args, const UniqueId& id, int first, int last, int parent) {
  // Small thread stacks: 2,048 worker threads at the default 8 MiB would reserve 16 GiB of address space.
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  pthread_setattr_default_np(&attr);
  CommunicatorOptions options = CommunicatorOptions::fromEnvironment();
  options.transport = "tcp";
  options.timeout = std::chrono::milliseconds(args.timeout_ms);
  options.local_size = 8;  // hosts of 8 ranks, as the layout assumes; their traffic still goes by TCP
  // Placed as a launcher places them, in blocks: the layout needs no exchange (the previous setup had no such data).
  options.host_block = args.group_all_reduce ? 8 : 0;
  // A simulated process holds thousands of ranks' communicators, past the flight recorder's per-process table
  // (a real process holds a handful); the recorder's cost is bench/flight_recorder_cost's to measure.
  options.flight_recorder = false;
  const int n = last - first;
  std::shared_ptr<Store> shared;
  if (args.shared_store) {
    try {
      shared = connectStore(id, "process of ranks " + std::to_string(first) + "-" + std::to_string(last - 1),
                            std::chrono::milliseconds(args.timeout_ms));
    } catch (const Error& e) {
      std::fprintf(stderr, "init_scale: %s\n", e.what());
      _exit(1);
    }
  }
  // The groups an 8 B all-reduce runs in, and what its sum must be there.
  struct GroupSum {
    const char* name;
    std::shared_ptr<Work> work;
    int64_t in = 0, out = -1, expected = 0;
  };
  struct Rank {
    std::shared_ptr<CountingStore> store;
    std::shared_ptr<Communicator> world;
    trainer::ProcessGroups groups;
    std::shared_ptr<Work> ring;
    int64_t sent = 0, received = -1;
    GroupSum sums[4];
    std::vector<std::string> peer_keys;  // --store-only: what the rank reads once all have published
    Clock::time_point store_done{};
    std::string error;
  };
  std::vector<Rank> ranks(static_cast<size_t>(n));
  const char ready_byte = 'r';
  if (!sendAll(parent, &ready_byte, 1, deadlineAfter(processWait(args)), "init_scale: ready").isOk()) _exit(1);
  int64_t start_ns = 0;
  if (!recvAll(parent, &start_ns, sizeof(start_ns), deadlineAfter(processWait(args)), "init_scale: start").isOk()) _exit(1);
  const Clock::time_point start{std::chrono::nanoseconds(start_ns)};

  std::vector<std::thread> creators;
  for (int t = 0; t < args.creator_threads; ++t) {
    creators.emplace_back([&, t] {
      for (int i = t; i < n; i += args.creator_threads) {
        Rank& r = ranks[static_cast<size_t>(i)];
        const int rank = first + i;
        try {
          CommunicatorOptions mine = options;
          mine.local_rank = rank % 8;
          // Each simulated host listens on an address of its own (127.0.0.0/8 is all loopback), as hosts do: 16,384
          // listeners on one address would make the kernel's port search the cost being measured.
          const int host = rank / 8 + 1;
          mine.transport_options.bind_address = "127." + std::to_string(host >> 16 & 255) + "." +
                                                std::to_string(host >> 8 & 255) + "." + std::to_string(host & 255);
          std::shared_ptr<Store> own = shared;
          if (!own) own = connectStore(id, "rank " + std::to_string(rank), std::chrono::milliseconds(args.timeout_ms));
          r.store = std::make_shared<CountingStore>(std::move(own));
          if (args.store_only) {  // bench/baselines/torch_store_scale.py's work, on our store
            const trainer::ParallelLayout layout = trainer::ParallelLayout::forWorld(args.ranks, args.tp, args.pp);
            const trainer::ParallelLayout::Coordinates c = layout.coordinatesOf(rank);
            auto next = [&](int g) {  // the next rank of this rank's ring in the world, then along each axis
              if (g == 0) return (rank + 1) % args.ranks;
              const trainer::ParallelAxis axis = kGroupAxes[g - 1];
              trainer::ParallelLayout::Coordinates n = c;
              n[axis] = (c[axis] + 1) % layout.size(axis);
              return layout.rankOf(n);
            };
            r.store->set("addr/" + std::to_string(rank), std::string(117, 'x'));
            // Read in a second pass: a creator thread serves several ranks in turn, and a read would wait for
            // a peer this thread has yet to publish.
            for (int g = 0; g < 4; ++g) r.peer_keys.push_back("addr/" + std::to_string(next(g)));
            continue;
          }
          r.world = Communicator::createOnStore(r.store, id.secret, id.job_id, rank, args.ranks, mine);
          r.groups = trainer::ProcessGroups::create(r.world, args.tp, args.pp, false);
          if (args.group_all_reduce) {
            // Each rank adds its world rank + 1: a group's sum is the sum over its members, known in advance.
            const std::shared_ptr<Communicator>* comms[4] = {&r.groups.world, &r.groups.tp, &r.groups.pp, &r.groups.dp};
            const char* names[4] = {"world", "tp", "pp", "dp"};
            const trainer::ParallelLayout& layout = r.groups.layout;
            const trainer::ParallelLayout::Coordinates me = r.groups.me;
            auto memberSum = [&](int g) {  // the world ranks + 1 of this rank's group g, from the layout
              int64_t total = 0;
              if (g == 0) return static_cast<int64_t>(args.ranks) * (args.ranks + 1) / 2;
              const trainer::ParallelAxis axis = kGroupAxes[g - 1];
              for (int m = 0; m < layout.size(axis); ++m) {
                trainer::ParallelLayout::Coordinates c = me;
                c[axis] = m;
                total += layout.rankOf(c) + 1;
              }
              return total;
            };
            for (int g = 0; g < 4; ++g) {
              if (!args.groups.count(names[g])) continue;
              GroupSum& sum = r.sums[g];
              sum.name = names[g];
              sum.in = rank + 1;
              sum.expected = memberSum(g);
              sum.work = (*comms[g])->allReduce(&sum.in, &sum.out, 1, mscInt64, mscSum);
            }
          } else {
            r.sent = rank;
            const int next = (rank + 1) % args.ranks, previous = (rank + args.ranks - 1) % args.ranks;
            r.ring = r.world->pointToPoint({{true, &r.sent, 1, mscInt64, next}, {false, &r.received, 1, mscInt64, previous}});
          }
        } catch (const std::exception& e) {
          r.error = "rank " + std::to_string(rank) + ": " + e.what();
        }
      }
    });
  }
  for (std::thread& c : creators) c.join();
  if (args.store_only) {
    std::vector<std::thread> readers;
    for (int t = 0; t < args.creator_threads; ++t) {
      readers.emplace_back([&, t] {
        for (int i = t; i < n; i += args.creator_threads) {
          Rank& r = ranks[static_cast<size_t>(i)];
          if (!r.error.empty() || !r.store) continue;
          try {
            (void)r.store->multiGet(r.peer_keys, std::chrono::milliseconds(args.timeout_ms));
            r.store_done = Clock::now();
          } catch (const std::exception& e) {
            r.error = "rank " + std::to_string(first + i) + ": " + e.what();
          }
        }
      });
    }
    for (std::thread& t : readers) t.join();
  }
  std::vector<RankResult> out;
  for (int i = 0; i < n; ++i) {
    Rank& r = ranks[static_cast<size_t>(i)];
    const int rank = first + i;
    RankResult res{rank, 0, 0, 0, 0};
    bool right = true;
    if (args.store_only && r.error.empty()) res.ready_s = std::chrono::duration<double>(r.store_done - start).count();
    if (r.ring) {
      Status s = r.ring->wait(std::chrono::milliseconds(args.timeout_ms));
      if (!s.isOk()) r.error = s.message();
      res.ready_s = std::chrono::duration<double>(r.ring->finishedAt() - start).count();
      right = r.received == (rank + args.ranks - 1) % args.ranks;
    }
    for (GroupSum& sum : r.sums) {
      if (!sum.work || !r.error.empty()) continue;
      Status s = sum.work->wait(std::chrono::milliseconds(args.timeout_ms));
      if (!s.isOk()) {
        r.error = "rank " + std::to_string(rank) + ": all-reduce in " + sum.name + ": " + s.message();
        continue;
      }
      res.ready_s = std::max(res.ready_s, std::chrono::duration<double>(sum.work->finishedAt() - start).count());
      if (sum.out != sum.expected) {
        right = false;
        r.error = "rank " + std::to_string(rank) + ": all-reduce in " + sum.name + " gave " + std::to_string(sum.out) +
                  ", not " + std::to_string(sum.expected);
      }
    }
    res.ok = r.error.empty() && right;
    if (!r.error.empty()) std::fprintf(stderr, "init_scale: %s\n", r.error.c_str());
    if (r.store) {
      res.store_ops = r.store->operations();
      res.store_bytes = r.store->bytes();
    }
    out.push_back(res);
  }
  const uint32_t count = static_cast<uint32_t>(out.size());
  const Deadline reported = deadlineAfter(processWait(args));
  if (!sendAll(parent, &count, sizeof(count), reported, "init_scale: results").isOk() ||
      !sendAll(parent, out.data(), out.size() * sizeof(RankResult), reported, "init_scale: results").isOk()) {
    _exit(1);
  }
  char bye;
  // Connections stay open until the parent has counted the store's.
  (void)recvAll(parent, &bye, 1, deadlineAfter(processWait(args)), "init_scale: end");
  _exit(0);
}

// Sockets open in process `pid` (0: this one), leaving out the descriptors in `skip`.
int socketsOf(pid_t pid, const std::set<int>& skip) {
  const std::string dir = "/proc/" + (pid == 0 ? std::string("self") : std::to_string(pid)) + "/fd";
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int count = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.' || skip.count(std::atoi(e->d_name))) continue;
    char target[64];
    const ssize_t len = readlink((dir + "/" + e->d_name).c_str(), target, sizeof(target) - 1);
    if (len > 0 && std::strncmp(target, "socket:", 7) == 0) ++count;
  }
  closedir(d);
  return count;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())))];
}

int run(const Args& args) {
  raiseFileLimit();
  UniqueId id;
  std::unique_ptr<TcpStoreServer> server;
  std::unique_ptr<testbed::RedisServer> redis;
  if (args.store == "tcp") {
    id = UniqueId::generate("tcp://127.0.0.1:1");
    TcpStoreServer::Options o;
    o.host = "127.0.0.1";
    o.secret = id.secret;
    server = std::make_unique<TcpStoreServer>(o);  // listening now; served once the workers are forked
    id.store_url = "tcp://127.0.0.1:" + std::to_string(server->port());
  } else {
    redis = std::make_unique<testbed::RedisServer>(&id, 20000);
    if (!redis->unavailable().empty()) {
      std::fprintf(stderr, "init_scale: %s\n", redis->unavailable().c_str());
      return 2;
    }
  }
  std::printf("# init_scale: %d ranks (tp %d x pp %d x dp %d), store %s (%s), %d processes x %d creator threads, "
              "transport tcp, ready after %s\n",
              args.ranks, args.tp, args.pp, args.ranks / (args.tp * args.pp), args.store.c_str(),
              args.shared_store ? "one connection per process" : "one connection per rank", args.processes,
              args.creator_threads,
              args.store_only         ? "the store work alone (publish, read 4 peers)"
              : args.group_all_reduce ? "an 8 B all-reduce in world, tp, pp and dp"
                                      : "a ring exchange on the world");
  std::printf("# machine: %u cores\n", std::thread::hardware_concurrency());
  std::fflush(stdout);
  struct Child {
    pid_t pid;
    Fd socket;  // to the worker process
  };
  std::vector<Child> children;
  for (int k = 0; k < args.processes; ++k) {
    const int first = static_cast<int>(int64_t{args.ranks} * k / args.processes);
    const int last = static_cast<int>(int64_t{args.ranks} * (k + 1) / args.processes);
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
      std::perror("init_scale: socketpair");
      return 1;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      server.reset();  // the child's copy of the server is not served (its threads were not forked)
      ::close(pair[0]);
      runWorker(args, id, first, last, pair[1]);
    }
    ::close(pair[1]);
    children.push_back({pid, Fd(pair[0])});
  }
  if (server) server->start();  // after the forks: a forked child has none of the server's threads
  for (const Child& c : children) {
    char byte;
    if (!recvAll(c.socket.get(), &byte, 1, deadlineAfter(processWait(args)), "init_scale: worker ready").isOk()) {
      std::fprintf(stderr, "init_scale: a worker process failed to start\n");
      return 1;
    }
  }
  const Clock::time_point start = Clock::now();
  const int64_t start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch()).count();
  for (const Child& c : children) {
    (void)sendAll(c.socket.get(), &start_ns, sizeof(start_ns), deadlineAfter(processWait(args)), "init_scale: start");
  }
  std::vector<RankResult> all;
  bool complete = true;
  const Deadline reported = deadlineAfter(processWait(args));
  for (const Child& c : children) {
    uint32_t count = 0;
    if (!recvAll(c.socket.get(), &count, sizeof(count), reported, "init_scale: results").isOk() || count > 1u << 20) {
      complete = false;
      continue;
    }
    std::vector<RankResult> part(count);
    if (!recvAll(c.socket.get(), part.data(), count * sizeof(RankResult), reported, "init_scale: results").isOk()) {
      complete = false;
    }
    all.insert(all.end(), part.begin(), part.end());
  }
  std::set<int> own;  // this process's sockets to its workers, not the store's
  for (const Child& c : children) own.insert(c.socket.get());
  const int store_sockets = server ? socketsOf(0, own) : socketsOf(redis->pid(), {});
  const size_t peak = server ? server->peakConnectionCount() : 0;
  for (const Child& c : children) {
    const char bye = 'x';
    (void)sendAll(c.socket.get(), &bye, 1, deadlineAfter(processWait(args)), "init_scale: end");
  }
  for (const Child& c : children) {
    int status = 0;
    waitpid(c.pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) complete = false;
  }
  int ok = 0;
  std::vector<double> ready;
  double ops = 0, bytes = 0, max_ops = 0;
  for (const RankResult& r : all) {
    ok += r.ok;
    ready.push_back(r.ready_s);
    ops += static_cast<double>(r.store_ops);
    bytes += static_cast<double>(r.store_bytes);
    max_ops = std::max(max_ops, static_cast<double>(r.store_ops));
  }
  const double n = std::max<double>(1, static_cast<double>(all.size()));
  const double last = ready.empty() ? 0 : *std::max_element(ready.begin(), ready.end());
  std::printf("%10s %10s %10s %10s %10s %12s %12s %12s %14s %12s\n", "ranks", "ready", "p50_s", "p90_s", "p99_s",
              "last_s", "us/rank", "store_ops", "store_bytes", "store_conns");
  std::printf("%10d %10d %10.3f %10.3f %10.3f %12.3f %12.2f %12.2f %14.1f %12s\n", args.ranks, ok, percentile(ready, 50),
              percentile(ready, 90), percentile(ready, 99), last, last / args.ranks * 1e6, ops / n, bytes / n,
              server ? std::to_string(peak).c_str() : "-");
  std::printf("# store: %s, peak connections %s, open sockets at the end of init %d; most store operations by one rank %.0f\n",
              args.store.c_str(), server ? std::to_string(peak).c_str() : "(redis: not tracked)", store_sockets, max_ops);
  if (!complete || ok != args.ranks) {
    std::fprintf(stderr, "init_scale: only %d of %d ranks became ready\n", ok, args.ranks);
    return 1;
  }
  std::printf("init_scale: ranks %d seconds %.3f\n", args.ranks, last);
  return 0;
}

}  // namespace
}  // namespace megascale::bench

int main(int argc, char** argv) {
  const megascale::bench::Args args = megascale::bench::parse(argc, argv);
  return megascale::bench::run(args);
}
