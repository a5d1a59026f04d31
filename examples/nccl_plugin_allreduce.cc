// nccl_plugin_allreduce: an NCCL all-reduce over every visible GPU of this machine, data checked and timed, for
// scripts/nccl_plugin_allreduce.sh to run through libnccl-net-megascale.so. It uses NCCL and the CUDA runtime
// only (no kernels of ours), so it builds wherever the toolkit is installed and runs where there are >= 2 GPUs.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "nccl_plugin_allreduce: %s: %s\n", what, cudaGetErrorString(e));
  return false;
}

bool ok(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return true;
  std::fprintf(stderr, "nccl_plugin_allreduce: %s: %s (%s)\n", what, ncclGetErrorString(r), ncclGetLastError(nullptr));
  return false;
}

size_t parseBytes(const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  const std::string unit = end;
  const double scale = unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : unit == "G" ? 1073741824.0 : 1.0;
  return static_cast<size_t>(v * scale);
}

}  // namespace

int main(int argc, char** argv) {
  size_t min_bytes = 8, max_bytes = size_t{256} << 20;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "-b") min_bytes = parseBytes(argv[i + 1]);
    else if (flag == "-e") max_bytes = parseBytes(argv[i + 1]);
    else if (flag == "-n") iters = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "usage: %s [-b min] [-e max] [-n iters]\n", argv[0]);
      return 2;
    }
  }
  int gpus = 0;
  if (!ok(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount")) return 1;
  if (gpus < 2) {
    std::fprintf(stderr, "nccl_plugin_allreduce: needs 2 or more GPUs for traffic between ranks (found %d)\n", gpus);
    return 2;
  }
  std::vector<int> devices(gpus);
  for (int g = 0; g < gpus; ++g) devices[g] = g;
  std::vector<ncclComm_t> comms(gpus);
  if (!ok(ncclCommInitAll(comms.data(), gpus, devices.data()), "ncclCommInitAll")) return 1;
  std::vector<cudaStream_t> streams(gpus);
  std::vector<float*> send(gpus), recv(gpus);
  for (int g = 0; g < gpus; ++g) {
    if (!ok(cudaSetDevice(g), "cudaSetDevice") || !ok(cudaStreamCreate(&streams[g]), "cudaStreamCreate") ||
        !ok(cudaMalloc(&send[g], max_bytes), "cudaMalloc") || !ok(cudaMalloc(&recv[g], max_bytes), "cudaMalloc")) {
      return 1;
    }
  }
  auto allReduce = [&](size_t count) {
    bool good = ok(ncclGroupStart(), "ncclGroupStart");
    for (int g = 0; g < gpus && good; ++g) {
      good = ok(ncclAllReduce(send[g], recv[g], count, ncclFloat, ncclSum, comms[g], streams[g]), "ncclAllReduce");
    }
    good = ok(ncclGroupEnd(), "ncclGroupEnd") && good;
    for (int g = 0; g < gpus && good; ++g) good = ok(cudaStreamSynchronize(streams[g]), "cudaStreamSynchronize");
    return good;
  };
  std::printf("# %d GPUs, float sum, %d iterations; busbw = algbw * 2(n-1)/n\n", gpus, iters);
  std::printf("#%11s %12s %10s %10s %8s\n", "size", "time(us)", "algbw", "busbw", "#wrong");
  long long wrong_total = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
    const size_t count = bytes / sizeof(float);
    for (int g = 0; g < gpus; ++g) {  // rank g contributes g + 1 everywhere: the sum is n(n+1)/2
      std::vector<float> values(count, static_cast<float>(g + 1));
      if (!ok(cudaSetDevice(g), "cudaSetDevice") ||
          !ok(cudaMemcpy(send[g], values.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy") ||
          !ok(cudaMemset(recv[g], 0, count * sizeof(float)), "cudaMemset")) {
        return 1;
      }
    }
    if (!allReduce(count)) return 1;  // warm-up and checked run
    long long wrong = 0;
    const float expected = static_cast<float>(gpus * (gpus + 1) / 2);
    for (int g = 0; g < gpus; ++g) {
      std::vector<float> result(count);
      if (!ok(cudaSetDevice(g), "cudaSetDevice") ||
          !ok(cudaMemcpy(result.data(), recv[g], count * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy")) {
        return 1;
      }
      for (float v : result) wrong += v != expected ? 1 : 0;
    }
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) {
      if (!allReduce(count)) return 1;
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / iters;
    const double algbw = static_cast<double>(count * sizeof(float)) / us / 1e3;
    std::printf("%12zu %12.1f %10.3f %10.3f %8lld\n", count * sizeof(float), us, algbw,
                algbw * 2.0 * (gpus - 1) / gpus, wrong);
    wrong_total += wrong;
  }
  for (int g = 0; g < gpus; ++g) {
    cudaSetDevice(g);
    cudaFree(send[g]);
    cudaFree(recv[g]);
    ncclCommDestroy(comms[g]);
  }
  std::printf("# Out of bounds values : %lld %s\n", wrong_total, wrong_total == 0 ? "OK" : "FAILED");
  return wrong_total == 0 ? 0 : 1;
}
