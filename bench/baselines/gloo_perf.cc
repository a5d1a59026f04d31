// Gloo baseline (TCP on loopback): ring-chunked or halving-doubling all-reduce, ring all-gather, fp32 sum,
// printing the same columns as our *_perf tools. Run under megascale-run (rank and size from MEGASCALE_*);
// ranks meet through a Gloo FileStore in GLOO_STORE_DIR (default /tmp).
#include <gloo/allgather_ring.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <memory>
#include <vector>

#include "bench/baselines/baseline_options.h"
#include "bench/table_format.h"

using namespace megascale::bench;

namespace {

int envInt(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) {
    std::fprintf(stderr, "gloo_perf: %s is not set (run under megascale-run)\n", name);
    std::exit(2);
  }
  return std::atoi(v);
}

}  // namespace

int main(int argc, char** argv) {
  BaselineOptions o = parseBaselineOptions(argc, argv);
  int rank = envInt("MEGASCALE_RANK"), n = envInt("MEGASCALE_WORLD_SIZE");
  const char* dir = std::getenv("GLOO_STORE_DIR");
  const char* job = std::getenv("MEGASCALE_UNIQUE_ID");
  std::string path = std::string(dir ? dir : "/tmp");
  gloo::rendezvous::FileStore file_store(path);
  // Scope keys by this job's unique id so stale files from earlier runs are never read.
  std::string prefix = std::to_string(std::hash<std::string>{}(job ? job : "gloo"));
  gloo::rendezvous::PrefixStore store(prefix, file_store);
  // On emulated or real hosts, the address to listen on (as ours reads it); loopback on one host.
  const char* address = std::getenv("MEGASCALE_TCP_IFADDR");
  gloo::transport::tcp::attr attr(address != nullptr && *address != '\0' ? address : "127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, n);
  context->connectFullMesh(store, device);
  bool gather = o.collective == "all_gather";
  if (!gather && o.collective != "all_reduce") {
    std::fprintf(stderr, "gloo_perf: unknown collective %s (all_reduce, all_gather)\n", o.collective.c_str());
    return 2;
  }
  std::string algo = o.algorithm.empty() ? "ring_chunked" : o.algorithm;
  if (rank == 0) {
    std::printf("# baseline: Gloo %s%s, %d ranks, fp32 sum, tcp on %s\n", o.collective.c_str(),
                gather ? "" : (" " + algo).c_str(), n, attr.hostname.c_str());
    printColumnHeader(stdout);
  }
  double factor = gather ? static_cast<double>(n - 1) / n : 2.0 * (n - 1) / n;
  gloo::BarrierAllToAll barrier(context);
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = static_cast<size_t>(bytes * o.factor)) {
    size_t count = gather ? bytes / 4 / n : bytes / 4;
    if (count == 0) continue;  // Gloo's algorithms need at least one element
    std::vector<float> data(count), out(gather ? count * n : 1);
    auto fill = [&] {
      for (size_t i = 0; i < count; ++i) data[i] = baselineValue(rank, i);
    };
    std::unique_ptr<gloo::Algorithm> op;
    std::vector<float*> ptrs{data.data()};
    if (gather) {
      op = std::make_unique<gloo::AllgatherRing<float>>(context, std::vector<const float*>{data.data()}, out.data(),
                                                         static_cast<int>(count));
    } else if (algo == "halving_doubling") {
      op = std::make_unique<gloo::AllreduceHalvingDoubling<float>>(context, ptrs, static_cast<int>(count));
    } else {
      op = std::make_unique<gloo::AllreduceRingChunked<float>>(context, ptrs, static_cast<int>(count));
    }
    for (int w = 0; w < o.warmup; ++w) op->run();
    barrier.run();
    auto start = std::chrono::steady_clock::now();
    for (int it = 0; it < o.iters; ++it) op->run();  // in place: values grow, timing is unaffected
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / o.iters;
    fill();
    op->run();
    int64_t wrong = 0;
    for (size_t i = 0; i < (gather ? count * n : count); ++i) {
      float want = 0;
      if (gather) want = baselineValue(static_cast<int>(i / count), i % count);
      else for (int r = 0; r < n; ++r) want += baselineValue(r, i);
      wrong += (gather ? out[i] : data[i]) != want;
    }
    double s = gather ? static_cast<double>(count) * 4 * n : static_cast<double>(count) * 4;
    if (rank == 0) {
      printRow(stdout, gather ? count * 4 * n : count * 4, count, "float", gather ? "none" : "sum", -1,
               measurement(s, us, factor, wrong), nullptr);
    }
    barrier.run();
  }
  return 0;
}
