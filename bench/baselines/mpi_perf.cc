// Open MPI baseline: times MPI_Allreduce, MPI_Allgather and MPI_Reduce_scatter_block on fp32 sum and prints
// the same columns as our *_perf tools (out-of-place; in-place N/A). Results are checked exactly.
#include <mpi.h>

#include <vector>

#include "bench/baselines/baseline_options.h"
#include "bench/table_format.h"

using namespace megascale::bench;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  BaselineOptions o = parseBaselineOptions(argc, argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  bool gather = o.collective == "all_gather", scatter = o.collective == "reduce_scatter";
  if (!gather && !scatter && o.collective != "all_reduce") {
    if (rank == 0) std::fprintf(stderr, "mpi_perf: unknown collective %s\n", o.collective.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  if (rank == 0) {
    std::printf("# baseline: Open MPI %s, %d ranks, fp32 sum\n", o.collective.c_str(), n);
    printColumnHeader(stdout);
  }
  double factor = gather || scatter ? static_cast<double>(n - 1) / n : 2.0 * (n - 1) / n;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = static_cast<size_t>(bytes * o.factor)) {
    // As nccl-tests: all-reduce count = bytes/4; all-gather and reduce-scatter count is per rank.
    size_t count = gather || scatter ? bytes / 4 / n : bytes / 4;
    size_t send_count = scatter ? count * n : count, recv_count = gather ? count * n : count;
    std::vector<float> send(std::max<size_t>(send_count, 1)), recv(std::max<size_t>(recv_count, 1));
    for (size_t i = 0; i < send_count; ++i) send[i] = baselineValue(rank, i);
    auto run = [&] {
      if (gather) MPI_Allgather(send.data(), static_cast<int>(count), MPI_FLOAT, recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_COMM_WORLD);
      else if (scatter) MPI_Reduce_scatter_block(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else MPI_Allreduce(send.data(), recv.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    };
    for (int w = 0; w < o.warmup; ++w) run();
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (int it = 0; it < o.iters; ++it) run();
    double local = (MPI_Wtime() - start) / o.iters, sum = 0;
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int64_t wrong = 0, total_wrong = 0;
    for (size_t i = 0; i < recv_count; ++i) {
      float want = 0;
      if (gather) {
        want = baselineValue(static_cast<int>(i / count), i % count);
      } else {
        size_t at = scatter ? count * rank + i : i;
        for (int r = 0; r < n; ++r) want += baselineValue(r, at);
      }
      wrong += recv[i] != want;
    }
    MPI_Allreduce(&wrong, &total_wrong, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    double s = gather || scatter ? static_cast<double>(count) * 4 * n : static_cast<double>(count) * 4;
    if (rank == 0) {
      printRow(stdout, gather ? recv_count * 4 : send_count * 4, count, "float", gather ? "none" : "sum", -1,
               measurement(s, sum / n * 1e6, factor, total_wrong), nullptr);
    }
  }
  MPI_Finalize();
  return 0;
}
