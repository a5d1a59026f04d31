// Runs under megascale-run: every collective x dtype x op x in/out-of-place x awkward counts through the
// C API, each result compared bit for bit with the exact answer. Exits non-zero, naming the first failures,
// if any rank saw a wrong element. --memory fake-device puts every buffer on the fake device
// (collectives/memory/fake_device.h), --memory device on the rank's GPU (local rank modulo the GPUs), filled and
// read back through the space's engine: the same check on device buffers.
// Inputs are small integers, so every sum, product, min and max is exact
// in every dtype whatever the reduction order.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "collectives/dtype.h"
#include "collectives/memory/cuda_space.h"
#include "collectives/memory/fake_device.h"
#include "megascale/megascale.h"
#include "testbed/reference/reference_values.h"

namespace {

using namespace megascale;

int g_rank = 0, g_size = 1;
long g_failures = 0, g_checked = 0;
memory::MemorySpace* g_space = nullptr;  // --memory: where the buffers lie (null: host)

void check(mscResult_t r, const std::string& what) {
  if (r != mscSuccess) {
    std::fprintf(stderr, "rank %d: %s failed: %s: %s\n", g_rank, what.c_str(), mscGetErrorString(r), mscGetLastError());
    std::exit(1);
  }
}

double input(int rank, size_t i, mscRedOp_t op) {
  if (op == mscProd) return (i + static_cast<size_t>(rank)) % 8 == 0 ? 2.0 : 1.0;
  return static_cast<double>((i * 7 + static_cast<size_t>(rank) * 3) % 8);
}

double reduced(size_t i, mscRedOp_t op) {
  double acc = input(0, i, op);
  for (int r = 1; r < g_size; ++r) {
    double v = input(r, i, op);
    acc = op == mscProd ? acc * v : op == mscMax ? std::max(acc, v) : op == mscMin ? std::min(acc, v) : acc + v;
  }
  return acc;
}

struct Case {
  std::string name;
  size_t send_count, recv_count;
  size_t in_place_count, in_place_send, in_place_recv;  // one-buffer layout when in place
  bool reduces;
  std::function<mscResult_t(const void*, void*, mscDataType_t, mscRedOp_t, mscComm_t)> run;
  // Expected value of receive element i; false if the element is not defined on this rank.
  std::function<bool(size_t i, mscRedOp_t op, double* v)> expected;
};

void runCase(const Case& c, mscDataType_t type, mscRedOp_t op, bool in_place, size_t count, mscComm_t comm) {
  size_t es = reference::elementBytes(type);
  // Kept from case to case: a large block freed goes back to the system, and ThreadSanitizer drops its shadow, so
  // fresh buffers each case cost page faults (1.2 M in a 4-rank check, 2 s of system time: 6x that on a busy pass).
  static std::vector<uint8_t> send, recv, one;
  send.assign(std::max<size_t>(c.send_count, 1) * es, 0);
  recv.assign(std::max<size_t>(c.recv_count, 1) * es, 0xA5);
  one.assign(std::max<size_t>(c.in_place_count, 1) * es, 0xA5);
  std::vector<uint8_t> want(es);
  uint8_t* s = in_place ? one.data() + c.in_place_send * es : send.data();
  uint8_t* r = in_place ? one.data() + c.in_place_recv * es : recv.data();
  for (size_t i = 0; i < c.send_count; ++i) reference::encode(type, input(g_rank, i, op), s, i);
  std::string what = c.name + " " + dtypeName(type) + " " + opName(op) + (in_place ? " in-place" : " out-of-place") +
                     " count " + std::to_string(count);
  // On the fake device: the same layout in device memory, the receive side's 0xA5 included.
  std::vector<uint8_t>& whole_r = in_place ? one : recv;
  uint8_t* run_s = s;
  uint8_t* run_r = r;
  void* device_s = nullptr;
  void* device_r = nullptr;
  memory::FakeDeviceSpace& fake = memory::fakeDevice();
  if (g_space != nullptr) {
    device_r = g_space->allocate(whole_r.size());
    if (!in_place) device_s = g_space->allocate(send.size());
    if (device_r == nullptr || (!in_place && device_s == nullptr)) {
      std::fprintf(stderr, "rank %d: %s: %s is full\n", g_rank, what.c_str(), g_space->name().c_str());
      std::exit(1);
    }
    check(memory::copyBlocking(device_r, whole_r.data(), whole_r.size()).isOk() ? mscSuccess : mscInternalError, what);
    if (!in_place) check(memory::copyBlocking(device_s, send.data(), send.size()).isOk() ? mscSuccess : mscInternalError, what);
    uint8_t* base = static_cast<uint8_t*>(device_r);
    run_r = base + (r - whole_r.data());
    run_s = in_place ? base + (s - whole_r.data()) : static_cast<uint8_t*>(device_s);
  }
  const uint64_t items_before = fake.itemsRun();
  check(c.run(run_s, run_r, type, op, comm), what);
  check(mscCommSynchronize(comm), what);
  if (g_space != nullptr) {
    check(memory::copyBlocking(whole_r.data(), device_r, whole_r.size()).isOk() ? mscSuccess : mscInternalError, what);
    // Bytes that crossed to another rank went through host staging, copied by the device's engine.
    if (g_space == &fake && g_size > 1 && count > 0 && fake.itemsRun() == items_before) {
      std::fprintf(stderr, "rank %d: %s: the device's engine ran nothing\n", g_rank, what.c_str());
      ++g_failures;
    }
    g_space->release(device_r);
    g_space->release(device_s);
  }
  long wrong = 0;
  for (size_t i = 0; i < c.recv_count; ++i) {
    double v;
    if (!c.expected(i, op, &v)) continue;
    reference::encodeReduced(type, op, v, g_size, want.data(), 0);
    ++g_checked;
    if (std::memcmp(want.data(), r + i * es, es) != 0) {
      if (++wrong <= 3) std::fprintf(stderr, "rank %d: %s: element %zu wrong (expected %g)\n", g_rank, what.c_str(), i, v);
    }
  }
  g_failures += wrong;
}

std::vector<Case> casesFor(size_t count) {
  const size_t n = static_cast<size_t>(g_size), me = static_cast<size_t>(g_rank);
  const int root = static_cast<int>(count % n);
  const int next = (g_rank + 1) % g_size, prev = (g_rank - 1 + g_size) % g_size;
  return {
      {"all_reduce", count, count, count, 0, 0, true,
       [=](const void* s, void* r, mscDataType_t t, mscRedOp_t op, mscComm_t c) { return mscAllReduce(s, r, count, t, op, c); },
       [=](size_t i, mscRedOp_t op, double* v) { return *v = reduced(i, op), true; }},
      {"all_gather", count, count * n, count * n, count * me, 0, false,
       [=](const void* s, void* r, mscDataType_t t, mscRedOp_t, mscComm_t c) { return mscAllGather(s, r, count, t, c); },
       [=](size_t i, mscRedOp_t op, double* v) { return *v = input(static_cast<int>(i / count), i % count, op), true; }},
      {"reduce_scatter", count * n, count, count * n, 0, count * me, true,
       [=](const void* s, void* r, mscDataType_t t, mscRedOp_t op, mscComm_t c) { return mscReduceScatter(s, r, count, t, op, c); },
       [=](size_t i, mscRedOp_t op, double* v) { return *v = reduced(count * me + i, op), true; }},
      {"broadcast", count, count, count, 0, 0, false,
       [=](const void* s, void* r, mscDataType_t t, mscRedOp_t, mscComm_t c) { return mscBroadcast(s, r, count, t, root, c); },
       [=](size_t i, mscRedOp_t op, double* v) { return *v = input(root, i, op), true; }},
      {"reduce", count, count, count, 0, 0, true,
       [=](const void* s, void* r, mscDataType_t t, mscRedOp_t op, mscComm_t c) { return mscReduce(s, r, count, t, op, root, c); },
       [=](size_t i, mscRedOp_t op, double* v) { return *v = reduced(i, op), g_rank == root; }},
      {"alltoall", count * n, count * n, count * n, 0, 0, false,
       [=](const void* s, void* r, mscDataType_t t, mscRedOp_t, mscComm_t c) { return mscAllToAll(s, r, count, t, c); },
       [=](size_t i, mscRedOp_t op, double* v) { return *v = input(static_cast<int>(i / count), count * me + i % count, op), true; }},
      {"sendrecv", count, count, 2 * count, 0, count, false,
       [=](const void* s, void* r, mscDataType_t t, mscRedOp_t, mscComm_t c) {
         if (g_size == 1) {
           return memory::copyBlocking(r, s, count * dtypeSize(t)).isOk() ? mscSuccess : mscInternalError;
         }
         mscGroupStart();
         mscSend(s, count, t, next, c);
         mscRecv(r, count, t, prev, c);
         return mscGroupEnd();
       },
       [=](size_t i, mscRedOp_t op, double* v) { return *v = input(prev, i, op), true; }},
  };
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "collective_check: %s\nusage: collective_check [--describe] [--collectives all_reduce,...] "
               "[--dtypes float,int8,...] [--ops sum,avg,...] [--memory host|device|fake-device] [COUNT...]\n",
               why);
  std::exit(2);
}

std::set<std::string> splitList(const char* text) {
  std::set<std::string> items;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) items.insert(item);
  return items;
}

// Parses a comma-separated list of names with `parse` (parseDtype, parseOp); an unknown name is a usage error.
template <typename T>
std::vector<T> parseList(const char* text, bool (*parse)(const std::string&, T*), const char* what) {
  std::vector<T> values;
  for (const std::string& name : splitList(text)) {
    T value;
    if (!parse(name, &value)) usage(("unknown " + std::string(what) + " " + name).c_str());
    values.push_back(value);
  }
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<size_t> counts = {0, 1, 5, 1000, 70001};
  bool describe = false;  // --describe: every rank prints what took effect (transports per peer) at the end
  std::vector<size_t> given;  // counts to test, for quick runs: collective_check 7 100
  // Filters, so that a test forcing one algorithm checks only the collectives it changes, and the sanitized
  // builds check one dtype per element size and fewer ops (the kernels have their own tests).
  std::set<std::string> only_collectives;
  std::vector<mscDataType_t> types;
  std::vector<mscRedOp_t> ops;
  std::string memory_kind = "host";
  for (int i = 1; i < argc; ++i) {
    bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--describe") == 0) {
      describe = true;
    } else if (std::strcmp(argv[i], "--collectives") == 0) {
      if (!has_value) usage("--collectives needs a list");
      only_collectives = splitList(argv[++i]);
    } else if (std::strcmp(argv[i], "--dtypes") == 0) {
      if (!has_value) usage("--dtypes needs a list");
      types = parseList<mscDataType_t>(argv[++i], parseDtype, "dtype");
    } else if (std::strcmp(argv[i], "--memory") == 0) {
      if (!has_value) usage("--memory needs host, device or fake-device");
      memory_kind = argv[++i];
      if (memory_kind != "host" && memory_kind != "device" && memory_kind != "fake-device") {
        usage(("unknown memory " + memory_kind).c_str());
      }
    } else if (std::strcmp(argv[i], "--ops") == 0) {
      if (!has_value) usage("--ops needs a list");
      ops = parseList<mscRedOp_t>(argv[++i], parseOp, "op");
    } else {
      char* end = nullptr;
      given.push_back(std::strtoull(argv[i], &end, 10));
      if (end == argv[i] || *end != '\0') usage((std::string("not a count: ") + argv[i]).c_str());
    }
  }
  if (!given.empty()) counts = given;
  for (const std::string& name : only_collectives) {
    bool known = false;
    for (const Case& c : casesFor(0)) known |= c.name == name;
    if (!known) usage(("unknown collective " + name).c_str());
  }
  if (types.empty()) {
    for (int t = 0; t < mscNumTypes; ++t) types.push_back(static_cast<mscDataType_t>(t));
  }
  if (ops.empty()) {
    for (int op = 0; op < mscNumOps; ++op) ops.push_back(static_cast<mscRedOp_t>(op));
  }
  if (memory_kind == "fake-device") g_space = &memory::fakeDevice();
  if (memory_kind == "device") {
    const char* local = std::getenv("MEGASCALE_LOCAL_RANK");
    memory::CudaSpace* cuda = nullptr;
    const Status s = memory::CudaSpace::forLocalRank(local != nullptr ? std::atoi(local) : 0, &cuda);
    if (!s.isOk()) {
      std::fprintf(stderr, "collective_check: --memory device: %s\n", s.message().c_str());
      return 2;
    }
    g_space = cuda;
  }
  mscComm_t comm;
  check(mscCommInitFromEnv(&comm), "init");
  check(mscCommUserRank(comm, &g_rank), "rank");
  check(mscCommCount(comm, &g_size), "count");
  for (size_t count : counts) {
    for (const Case& c : casesFor(count)) {
      if (!only_collectives.empty() && !only_collectives.count(c.name)) continue;
      for (mscDataType_t type : types) {
        for (size_t k = 0; k < (c.reduces ? ops.size() : 1); ++k) {
          for (bool in_place : {false, true}) {
            runCase(c, type, c.reduces ? ops[k] : mscSum, in_place, count, comm);
          }
        }
      }
    }
    check(mscBarrier(comm), "barrier");
  }
  // The verdict is not the library's: every rank fails on its own wrong elements, and the total travels in
  // self-checking records (testbed/reference), so a collective that zeroes its output cannot report 0 wrong.
  std::string problem;
  const int64_t total = reference::totalWrong(g_failures, comm, &problem);
  if (total < 0) std::fprintf(stderr, "collective_check: %s\n", problem.c_str());
  if (g_rank == 0 && total >= 0) {
    std::printf("collective_check: %d ranks, %ld elements checked on rank 0, %lld wrong over all ranks\n", g_size,
                g_checked, static_cast<long long>(total));
  }
  if (g_failures > 0) std::fprintf(stderr, "collective_check: rank %d saw %ld wrong element(s)\n", g_rank, g_failures);
  if (describe) {
    char text[512];
    check(mscCommGetDescription(comm, text, sizeof(text)), "describe");
    std::printf("collective_check: rank %d: %s\n", g_rank, text);
  }
  check(mscCommDestroy(comm), "destroy");
  return total == 0 && g_failures == 0 ? 0 : 1;
}
