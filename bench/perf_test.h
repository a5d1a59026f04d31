// The shared driver of the *_perf tools: nccl-tests' flags, columns, busbw factors, data check and exit
// status. Each tool is one file that describes its collective (sizes, busbw factor, expected data, call).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/bench_memory.h"
#include "megascale/megascale.h"

namespace megascale::bench {

/// Buffer geometry of one row, in elements, derived from the requested byte size as nccl-tests does.
struct Geometry {
  size_t count = 0;       // the count argument of the call (the "count" column)
  size_t send_count = 0;  // elements in the send buffer
  size_t recv_count = 0;  // elements in the receive buffer
  // In place, one buffer of in_place_count elements holds both: the send data at in_place_send_offset and the
  // result at in_place_recv_offset (NCCL: all-gather sends from recv + rank*count, reduce-scatter receives
  // into send + rank*count).
  size_t in_place_count = 0;
  size_t in_place_send_offset = 0;
  size_t in_place_recv_offset = 0;
};

struct CollectiveTest {
  const char* name;        // "all_reduce_perf"
  bool uses_op;
  bool uses_root;
  bool supports_in_place;
  Geometry (*geometry)(size_t bytes, size_t type_size, int nranks, int rank);
  double (*busbw_factor)(int nranks);
  /// Bytes S in algbw = S / time: count*size or count*size*nranks per nccl-tests.
  double (*algbw_bytes)(const Geometry& g, size_t type_size, int nranks);
  /// Value of element i of rank's send buffer, given as a small exact number; prod gets values in {1, 2}.
  /// Expected value of receive element i on `rank` (the driver computes from inputs).
  double (*expected)(const Geometry& g, int rank, int nranks, int root, mscRedOp_t op, size_t i, int seed,
                     bool* defined);
  mscResult_t (*run)(const void* send, void* recv, const Geometry& g, mscDataType_t type, mscRedOp_t op, int root,
                     mscComm_t comm);
};

/// nccl-tests' flags, plus the plugin mode of sendrecv_perf.
struct PerfOptions {
  size_t min_bytes = 32 << 20, max_bytes = 32 << 20, step_bytes = 1 << 20;
  double step_factor = 0;
  int iters = 20, warmup = 1, agg = 1, check = 1, blocking = 0, average = 1, cycles = 1;
  std::vector<mscDataType_t> types = {mscFloat32};
  std::vector<mscRedOp_t> ops = {mscSum};
  int root = 0;
  bool all_roots = false;
  std::string net_plugin;          // --net-plugin PATH
  std::string net_plugin_version;  // --net-plugin-version vN; "" = newest
  int net_plugin_rounds = 5;       // --net-plugin-rounds: alternating transport/plugin rounds
  BenchMemory::Kind memory = BenchMemory::kHost;  // --memory host|pinned|device|fake-device
};

constexpr int kNetPluginFlag = 1001, kNetPluginVersionFlag = 1002, kNetPluginRoundsFlag = 1003, kMemoryFlag = 1004;

/// Parses the flags; exits with status 2 and a message on bad input (as nccl-tests does).
PerfOptions parsePerfOptions(int argc, char** argv, const CollectiveTest& test);

/// A tool's alternative run for --net-plugin, on the bootstrap communicator; returns the exit status.
using NetPluginMode = int (*)(const PerfOptions& options, mscComm_t comm);

/// Deterministic input value of element i on rank; exact in every dtype, and products stay small.
double inputValue(int rank, size_t i, int seed, mscRedOp_t op);
/// Reduction of inputValue over all ranks for element i, in exact arithmetic.
double reducedValue(int nranks, size_t i, int seed, mscRedOp_t op);

/// Parses nccl-tests flags, runs the sweep, prints the table on rank 0. Returns the process exit code.
int runPerfTest(const CollectiveTest& test, int argc, char** argv, NetPluginMode net_plugin_mode = nullptr);

}  // namespace megascale::bench
