#include "bench/perf_test.h"

#include <getopt.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collectives/dtype.h"
#include "bench/byte_size.h"
#include "bench/table_format.h"
#include "testbed/reference/reference_values.h"

namespace megascale::bench {

namespace {

size_t parseSize(const char* text) {
  size_t bytes = 0;
  if (!parseByteSize(text, &bytes)) {
    std::fprintf(stderr, "invalid size '%s' (a number with an optional K, M or G)\n", text);
    std::exit(2);
  }
  return bytes;
}

int parseInt(const char* flag, const char* text, int min) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < min) {
    std::fprintf(stderr, "invalid value '%s' for %s\n", text, flag);
    std::exit(2);
  }
  return static_cast<int>(v);
}

void usage(const char* name) {
  std::printf("usage: %s [options]   (run under megascale-run; MEGASCALE_TRANSPORT picks shm or tcp)\n"
              "  -b,--minbytes <size>     smallest size (default 32M; K/M/G suffixes are 1024-based)\n"
              "  -e,--maxbytes <size>     largest size (default 32M)\n"
              "  -i,--stepbytes <size>    additive step (default 1M)\n"
              "  -f,--stepfactor <n>      multiplicative step\n"
              "  -n,--iters <n>           timed iterations (default 20)\n"
              "  -w,--warmup_iters <n>    warm-up iterations (default 1)\n"
              "  -m,--agg_iters <n>       operations grouped per iteration (default 1)\n"
              "  -N,--run_cycles <n>      repeat the sweep (default 1)\n"
              "  -c,--check <n>           checked iterations (default 1; 0 disables)\n"
              "  -d,--datatype <type>     float, half, bfloat16, double, int8, uint8, int32, uint32, int64, uint64, all\n"
              "  -o,--op <op>             sum, prod, max, min, avg, all\n"
              "  -r,--root <rank|all>     root of rooted collectives (default 0)\n"
              "  -z,--blocking <0..3>     wait after each iteration (1,2) or each sweep step (3)\n"
              "  -a,--average <0..3>      time across ranks: 0 rank 0, 1 average, 2 min, 3 max\n"
              "  -t,--nthreads 1, -g,--ngpus 1   accepted for compatibility (one rank per process)\n"
              "  --net-plugin <path>      sendrecv_perf: point-to-point through this NCCL net plugin next to the bare\n"
              "                           megascale transport (pairs of ranks 0-1, 2-3, ...)\n"
              "  --net-plugin-version <v> the plugin version to drive (v8..v11; default the newest exported)\n"
              "  --net-plugin-rounds <n>  alternating transport/plugin rounds, each one's best reported (default 5)\n"
              "  --memory <where>         host (default), pinned or device (the rank's GPU), fake-device (no GPU)\n",
              name);
}

}  // namespace

PerfOptions parsePerfOptions(int argc, char** argv, const CollectiveTest& test) {
  PerfOptions o;
  static const option longs[] = {
      {"minbytes", required_argument, nullptr, 'b'},   {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},  {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},      {"warmup_iters", required_argument, nullptr, 'w'},
      {"agg_iters", required_argument, nullptr, 'm'},  {"run_cycles", required_argument, nullptr, 'N'},
      {"check", required_argument, nullptr, 'c'},      {"datatype", required_argument, nullptr, 'd'},
      {"op", required_argument, nullptr, 'o'},         {"root", required_argument, nullptr, 'r'},
      {"blocking", required_argument, nullptr, 'z'},   {"average", required_argument, nullptr, 'a'},
      {"nthreads", required_argument, nullptr, 't'},   {"ngpus", required_argument, nullptr, 'g'},
      {"parallel_init", required_argument, nullptr, 'p'}, {"help", no_argument, nullptr, 'h'},
      {"net-plugin", required_argument, nullptr, kNetPluginFlag},
      {"net-plugin-version", required_argument, nullptr, kNetPluginVersionFlag},
      {"net-plugin-rounds", required_argument, nullptr, kNetPluginRoundsFlag},
      {"memory", required_argument, nullptr, kMemoryFlag},
      {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "b:e:i:f:n:w:m:N:c:d:o:r:z:a:t:g:p:h", longs, nullptr)) != -1) {
    switch (c) {
      case 'b': o.min_bytes = parseSize(optarg); break;
      case 'e': o.max_bytes = parseSize(optarg); break;
      case 'i': o.step_bytes = parseSize(optarg); o.step_factor = 0; break;
      case 'f': o.step_factor = std::strtod(optarg, nullptr); break;
      case 'n': o.iters = parseInt("-n", optarg, 1); break;
      case 'w': o.warmup = parseInt("-w", optarg, 0); break;
      case 'm': o.agg = parseInt("-m", optarg, 1); break;
      case 'N': o.cycles = parseInt("-N", optarg, 1); break;
      case 'c': o.check = parseInt("-c", optarg, 0); break;
      case 'z': o.blocking = parseInt("-z", optarg, 0); break;
      case 'a': o.average = parseInt("-a", optarg, 0); break;
      case 'p': break;
      case kNetPluginFlag: o.net_plugin = optarg; break;
      case kNetPluginVersionFlag: o.net_plugin_version = optarg; break;
      case kNetPluginRoundsFlag: o.net_plugin_rounds = parseInt("--net-plugin-rounds", optarg, 1); break;
      case kMemoryFlag: {
        if (!BenchMemory::parse(optarg, &o.memory)) {
          std::fprintf(stderr, "%s: unknown memory '%s' (host, pinned, device or fake-device)\n", test.name, optarg);
          std::exit(2);
        }
        break;
      }
      case 't':
      case 'g':
        if (parseInt(c == 't' ? "-t" : "-g", optarg, 1) != 1) {
          std::fprintf(stderr, "%s: one rank per process; start more ranks with megascale-run -n\n", test.name);
          std::exit(2);
        }
        break;
      case 'd': {
        o.types.clear();
        if (std::string(optarg) == "all") {
          for (int t = 0; t < mscNumTypes; ++t) o.types.push_back(static_cast<mscDataType_t>(t));
        } else {
          mscDataType_t t;
          if (!parseDtype(optarg, &t)) {
            std::fprintf(stderr, "%s: unknown datatype '%s'\n", test.name, optarg);
            std::exit(2);
          }
          o.types.push_back(t);
        }
        break;
      }
      case 'o': {
        o.ops.clear();
        if (std::string(optarg) == "all") {
          for (int op = 0; op < mscNumOps; ++op) o.ops.push_back(static_cast<mscRedOp_t>(op));
        } else {
          mscRedOp_t op;
          if (!parseOp(optarg, &op)) {
            std::fprintf(stderr, "%s: unknown op '%s'\n", test.name, optarg);
            std::exit(2);
          }
          o.ops.push_back(op);
        }
        break;
      }
      case 'r':
        if (std::string(optarg) == "all") o.all_roots = true;
        else o.root = parseInt("-r", optarg, 0);
        break;
      case 'h': usage(test.name); std::exit(0);
      default: usage(test.name); std::exit(2);
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "%s: unexpected argument '%s'\n", test.name, argv[optind]);
    std::exit(2);
  }
  if (o.max_bytes < o.min_bytes) {
    std::fprintf(stderr, "%s: -e %zu is below -b %zu\n", test.name, o.max_bytes, o.min_bytes);
    std::exit(2);
  }
  if (o.step_factor != 0 && o.step_factor <= 1) {
    std::fprintf(stderr, "%s: -f must be > 1\n", test.name);
    std::exit(2);
  }
  if (!test.uses_op) o.ops = {mscSum};
  return o;
}

namespace {

void check(mscResult_t r, const char* what) {
  if (r != mscSuccess) {
    std::fprintf(stderr, "%s failed: %s: %s\n", what, mscGetErrorString(r), mscGetLastError());
    std::exit(1);
  }
}

double combineTime(double local, int mode, mscComm_t comm, int nranks) {
  double all = local;
  mscRedOp_t op = mode == 2 ? mscMin : mode == 3 ? mscMax : mscSum;
  if (mode == 0) {
    check(mscBroadcast(&local, &all, 1, mscFloat64, 0, comm), "time broadcast");
  } else {
    check(mscAllReduce(&local, &all, 1, mscFloat64, op, comm), "time all-reduce");
  }
  check(mscCommSynchronize(comm), "synchronize");
  return mode == 1 ? all / nranks : all;
}

// Host buffers the tool fills and checks, and the buffers the collective runs on: the same ones in host memory,
// else copies in the --memory space (copied in before a run and out after, outside the timed loop).
struct Buffers {
  std::vector<uint8_t> send, recv, in_place, expected;
  const BenchMemory* memory = nullptr;
  uint8_t* run_send = nullptr;
  uint8_t* run_recv = nullptr;
  uint8_t* run_in_place = nullptr;

  Buffers() = default;
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers() {
    if (memory == nullptr || memory->isHost()) return;
    memory->release(run_send);
    memory->release(run_recv);
    memory->release(run_in_place);
  }
  void place(const BenchMemory& m) {
    memory = &m;
    if (m.isHost()) {
      run_send = send.data();
      run_recv = recv.data();
      run_in_place = in_place.data();
      return;
    }
    run_send = static_cast<uint8_t*>(m.allocate(send.size()));
    run_recv = static_cast<uint8_t*>(m.allocate(recv.size()));
    run_in_place = static_cast<uint8_t*>(m.allocate(in_place.size()));
    if (run_send == nullptr || run_recv == nullptr || run_in_place == nullptr) {
      std::fprintf(stderr, "cannot allocate %zu bytes of %s memory\n", send.size() + recv.size() + in_place.size(),
                   m.describe().c_str());
      std::exit(1);
    }
  }
  // Host contents to the run buffers of one layout, and back.
  void copyIn(bool in_place_layout) {
    if (memory->isHost()) return;
    if (in_place_layout) {
      copyOrExit(run_in_place, in_place.data(), in_place.size());
    } else {
      copyOrExit(run_send, send.data(), send.size());
      copyOrExit(run_recv, recv.data(), recv.size());
    }
  }
  void copyOut(bool in_place_layout) {
    if (memory->isHost()) return;
    if (in_place_layout) copyOrExit(in_place.data(), run_in_place, in_place.size());
    else copyOrExit(recv.data(), run_recv, recv.size());
  }
  static void copyOrExit(void* dst, const void* src, size_t bytes) {
    Status s = memory::copyBlocking(dst, src, bytes);
    if (!s.isOk()) {
      std::fprintf(stderr, "copying %zu bytes to or from the run's buffers: %s\n", bytes, s.message().c_str());
      std::exit(1);
    }
  }
};

// One timed measurement (out-of-place or in-place) and its data check. Returns the time in us; sets *wrong to
// the wrong elements of all ranks (-1 when not checked) and adds this rank's own to *own_wrong. Inputs and
// expected bytes are encoded by testbed/reference, never by the library under test.
double measure(const CollectiveTest& test, const PerfOptions& o, const Geometry& g, mscDataType_t type, mscRedOp_t op,
               int root, bool in_place, mscComm_t comm, int rank, int nranks, Buffers& b, int64_t* wrong,
               int64_t* own_wrong) {
  size_t es = reference::elementBytes(type);
  uint8_t* host_base = in_place ? b.in_place.data() : nullptr;
  uint8_t* host_recv = in_place ? host_base + g.in_place_recv_offset * es : b.recv.data();
  uint8_t* host_send = in_place ? host_base + g.in_place_send_offset * es : b.send.data();
  uint8_t* run_base = in_place ? b.run_in_place : nullptr;
  uint8_t* recv = in_place ? run_base + g.in_place_recv_offset * es : b.run_recv;
  uint8_t* send = in_place ? run_base + g.in_place_send_offset * es : b.run_send;
  std::vector<uint8_t>& cleared = in_place ? b.in_place : b.recv;
  auto fill = [&](int seed) {
    for (size_t i = 0; i < g.send_count; ++i) reference::encode(type, inputValue(rank, i, seed, op), host_send, i);
    b.copyIn(in_place);
  };
  fill(0);
  for (int w = 0; w < o.warmup; ++w) check(test.run(send, recv, g, type, op, root, comm), test.name);
  check(mscCommSynchronize(comm), "synchronize");
  check(mscBarrier(comm), "barrier");
  check(mscCommSynchronize(comm), "synchronize");
  auto start = std::chrono::steady_clock::now();
  for (int it = 0; it < o.iters; ++it) {
    if (o.agg > 1) check(mscGroupStart(), "group start");
    for (int a = 0; a < o.agg; ++a) check(test.run(send, recv, g, type, op, root, comm), test.name);
    if (o.agg > 1) check(mscGroupEnd(), "group end");
    if (o.blocking == 1 || o.blocking == 2) check(mscCommSynchronize(comm), "synchronize");
    if (o.blocking == 1) {
      check(mscBarrier(comm), "barrier");
      check(mscCommSynchronize(comm), "synchronize");
    }
  }
  check(mscCommSynchronize(comm), "synchronize");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double us = combineTime(seconds, o.average, comm, nranks) * 1e6 / (o.iters * o.agg);

  *wrong = -1;
  if (o.check > 0) {
    int64_t local_wrong = 0;
    for (int c = 0; c < o.check; ++c) {
      int seed = c + 1;
      std::memset(cleared.data(), 0, cleared.size());
      fill(seed);
      check(test.run(send, recv, g, type, op, root, comm), test.name);
      check(mscCommSynchronize(comm), "synchronize");
      b.copyOut(in_place);
      for (size_t i = 0; i < g.recv_count; ++i) {
        bool defined = true;
        double v = test.expected(g, rank, nranks, root, op, i, seed, &defined);
        if (!defined) continue;
        reference::encodeReduced(type, op, v, nranks, b.expected.data(), 0);
        if (std::memcmp(b.expected.data(), host_recv + i * es, es) != 0) ++local_wrong;
      }
    }
    *own_wrong += local_wrong;
    std::string problem;
    *wrong = reference::totalWrong(local_wrong, comm, &problem);
    if (*wrong < 0) {  // the verdict cannot be known: the run fails rather than print a number nobody checked
      std::fprintf(stderr, "%s: %s\n", test.name, problem.c_str());
      std::exit(1);
    }
  }
  return us;
}

void printHeader(const CollectiveTest& test, const PerfOptions& o, const BenchMemory& memory, mscComm_t comm, int rank,
                 int nranks) {
  struct Who {
    int pid;
    char host[64];
  } me{static_cast<int>(getpid()), {}}, *all = new Who[nranks];
  gethostname(me.host, sizeof(me.host) - 1);
  check(mscAllGather(&me, all, sizeof(Who), mscUint8, comm), "all-gather of hosts");
  check(mscCommSynchronize(comm), "synchronize");
  char description[256];  // what took effect, not what the environment asked for
  check(mscCommGetDescription(comm, description, sizeof(description)), "describe the communicator");
  if (rank == 0) {
    std::printf("# nThread 1 nGpus 1 minBytes %zu maxBytes %zu step: %g(%s) warmup iters: %d iters: %d agg iters: %d "
                "validation: %d graph: 0\n#\n",
                o.min_bytes, o.max_bytes, o.step_factor != 0 ? o.step_factor : static_cast<double>(o.step_bytes),
                o.step_factor != 0 ? "factor" : "bytes", o.warmup, o.iters, o.agg, o.check > 0 ? 1 : 0);
    std::printf("# megascale %d.%d.%d %s\n# buffers: %s memory\n#\n# Using devices\n", MSC_MAJOR, MSC_MINOR, MSC_PATCH,
                description, memory.describe().c_str());
    for (int r = 0; r < nranks; ++r) {
      std::printf("#  Rank %2d Group  0 Pid %6d on %10s device  0 [cpu]\n", r, all[r].pid, all[r].host);
    }
    printColumnHeader(stdout);
    std::fflush(stdout);
  }
  delete[] all;
  (void)test;
}

}  // namespace

double inputValue(int rank, size_t i, int seed, mscRedOp_t op) {
  if (op == mscProd) return ((i + static_cast<size_t>(rank) + static_cast<size_t>(seed)) % 8 == 0) ? 2.0 : 1.0;
  return static_cast<double>((i * 7 + static_cast<size_t>(rank) * 3 + static_cast<size_t>(seed) * 5) % 8);
}

double reducedValue(int nranks, size_t i, int seed, mscRedOp_t op) {
  double acc = inputValue(0, i, seed, op);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(r, i, seed, op);
    switch (op) {
      case mscProd: acc *= v; break;
      case mscMax: acc = std::max(acc, v); break;
      case mscMin: acc = std::min(acc, v); break;
      default: acc += v; break;
    }
  }
  return acc;
}

int runPerfTest(const CollectiveTest& test, int argc, char** argv, NetPluginMode net_plugin_mode) {
  PerfOptions o = parsePerfOptions(argc, argv, test);
  if (!o.net_plugin.empty() && net_plugin_mode == nullptr) {
    std::fprintf(stderr, "%s: --net-plugin is a mode of sendrecv_perf\n", test.name);
    return 2;
  }
  mscComm_t comm = nullptr;
  mscResult_t init = mscCommInitFromEnv(&comm);
  if (init != mscSuccess) {
    std::fprintf(stderr, "%s: cannot initialize: %s: %s\n", test.name, mscGetErrorString(init), mscGetLastError());
    return 1;
  }
  int rank = 0, nranks = 1;
  mscCommUserRank(comm, &rank);
  mscCommCount(comm, &nranks);
  if (!o.all_roots && o.root >= nranks) {
    if (rank == 0) std::fprintf(stderr, "%s: root %d is not a rank (%d ranks)\n", test.name, o.root, nranks);
    return 2;
  }
  if (net_plugin_mode != nullptr && !o.net_plugin.empty()) {
    const int status = net_plugin_mode(o, comm);
    mscResult_t done = mscCommDestroy(comm);
    return status != 0 ? status : done == mscSuccess ? 0 : 1;
  }
  BenchMemory memory;
  std::string why;
  const char* local_rank = std::getenv("MEGASCALE_LOCAL_RANK");
  if (!BenchMemory::open(o.memory, local_rank != nullptr ? std::atoi(local_rank) : 0, &memory, &why)) {
    std::fprintf(stderr, "%s: rank %d: %s\n", test.name, rank, why.c_str());
    return 2;
  }
  printHeader(test, o, memory, comm, rank, nranks);
  int64_t errors = 0, own_errors = 0;
  double bw_sum = 0;
  int bw_count = 0;
  for (int cycle = 0; cycle < o.cycles; ++cycle) {
    for (mscDataType_t type : o.types) {
      size_t es = reference::elementBytes(type);
      for (mscRedOp_t op : o.ops) {
        int first_root = o.all_roots ? 0 : o.root, last_root = o.all_roots ? nranks - 1 : o.root;
        if (!test.uses_root) first_root = last_root = -1;
        for (int root = first_root; root <= last_root; ++root) {
          for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;) {
            Geometry g = test.geometry(bytes, es, nranks, rank);
            Buffers b;
            b.send.assign(std::max<size_t>(g.send_count, 1) * es, 0);
            b.recv.assign(std::max<size_t>(g.recv_count, 1) * es, 0);
            b.in_place.assign(std::max<size_t>(g.in_place_count, 1) * es, 0);
            b.expected.assign(es, 0);
            b.place(memory);
            int64_t wrong_out, wrong_in = -1;
            int r = root < 0 ? 0 : root;
            double t_out = measure(test, o, g, type, op, r, false, comm, rank, nranks, b, &wrong_out, &own_errors);
            double t_in = test.supports_in_place ? measure(test, o, g, type, op, r, true, comm, rank, nranks, b, &wrong_in, &own_errors) : 0;
            double s = test.algbw_bytes(g, es, nranks);
            Measurement out = measurement(s, t_out, test.busbw_factor(nranks), wrong_out);
            Measurement in = measurement(s, t_in, test.busbw_factor(nranks), wrong_in);
            errors += std::max<int64_t>(wrong_out, 0) + std::max<int64_t>(wrong_in, 0);
            bw_sum += out.busbw + (test.supports_in_place ? in.busbw : 0);
            bw_count += test.supports_in_place ? 2 : 1;
            if (rank == 0) {
              printRow(stdout, std::max(g.recv_count, g.send_count) * es, g.count, dtypeName(type),
                       test.uses_op ? opName(op) : "none", root, out, test.supports_in_place ? &in : nullptr);
            }
            size_t next = o.step_factor != 0 ? static_cast<size_t>(static_cast<double>(bytes) * o.step_factor) : bytes + o.step_bytes;
            if (next <= bytes) break;
            bytes = next;
          }
        }
      }
    }
  }
  double avg_bw = bw_count > 0 ? bw_sum / bw_count : 0;
  const char* min_bw_env = std::getenv("NCCL_TESTS_MIN_BW");
  bool bw_ok = min_bw_env == nullptr || avg_bw >= 0.9 * std::atof(min_bw_env);
  if (rank == 0) {
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(errors), errors == 0 ? "OK" : "FAILED");
    std::printf("# Avg bus bandwidth    : %g %s\n#\n", avg_bw, bw_ok ? "" : "FAILED");
    std::printf("# Collective test concluded: %s\n", test.name);
    std::fflush(stdout);
  }
  // No rank leaves before rank 0 has printed the footer: a failing exit status would otherwise make the
  // launcher stop rank 0 mid-report.
  check(mscBarrier(comm), "final barrier");
  check(mscCommSynchronize(comm), "final barrier");
  mscResult_t done = mscCommDestroy(comm);
  if (done != mscSuccess) {
    std::fprintf(stderr, "%s: destroy failed: %s\n", test.name, mscGetLastError());
    return 1;
  }
  if (own_errors > 0) {  // this rank's own verdict, whatever the exchange of counts reported
    std::fprintf(stderr, "%s: rank %d saw %lld wrong element(s)\n", test.name, rank, static_cast<long long>(own_errors));
  }
  return errors == 0 && own_errors == 0 && bw_ok ? 0 : 1;
}

}  // namespace megascale::bench
