#include "launcher/self_checks.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

#include "common/elapsed.h"
#include "trainer/kernels/gemm.h"

namespace megascale::launcher {

namespace {

using Clock = std::chrono::steady_clock;

// Small integers: products and sums of up to 2^20 of them stay exact in float, whatever the order.
float operand(int64_t i, int64_t j, int salt) { return static_cast<float>(((i * 31 + j * 17 + salt) % 7) - 3); }

std::string format(const char* fmt, double a, double b = 0) {
  char text[160];
  std::snprintf(text, sizeof(text), fmt, a, b);
  return text;
}

Status waitFor(const std::shared_ptr<Work>& work, std::chrono::milliseconds timeout) { return work->wait(timeout); }

}  // namespace

CheckResult checkGemm(int64_t size, double seconds) {
  const int64_t n = size;
  std::vector<float> a(static_cast<size_t>(n * n)), b(a.size()), c(a.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      a[static_cast<size_t>(i * n + j)] = operand(i, j, 1);
      b[static_cast<size_t>(i * n + j)] = operand(i, j, 2);
    }
  }
  const trainer::GemmCall<float> call{
      trainer::Trans::kNo, trainer::Trans::kNo, n, n, n, a.data(), n, b.data(), n, 0.0f, c.data(), n};
  trainer::gemm(call);  // warm-up: thread pools, page faults
  int runs = 0;
  const auto t0 = Clock::now();
  do {
    trainer::gemm(call);
    ++runs;
  } while (secondsSince(t0) < seconds);
  CheckResult r;
  r.figure =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) * runs / secondsSince(t0) / 1e9;
  // Row sums: C 1 must equal A (B 1) exactly (integers far below 2^53).
  std::vector<int64_t> b_ones(static_cast<size_t>(n), 0);
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t j = 0; j < n; ++j)
      b_ones[static_cast<size_t>(k)] += static_cast<int64_t>(b[static_cast<size_t>(k * n + j)]);
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t expected = 0;
    double got = 0;
    for (int64_t k = 0; k < n; ++k)
      expected += static_cast<int64_t>(a[static_cast<size_t>(i * n + k)]) * b_ones[static_cast<size_t>(k)];
    for (int64_t j = 0; j < n; ++j) got += c[static_cast<size_t>(i * n + j)];
    if (got != static_cast<double>(expected)) {
      r.detail = "wrong results: row " + std::to_string(i) + " sums to " + format("%.0f", got) + ", not " +
                 std::to_string(expected);
      return r;
    }
  }
  for (int64_t s = 0; s < 1024; ++s) {  // elements the row sums could miss (errors that cancel in a row)
    const int64_t i = (s * 7919) % n, j = (s * 104729 + 13) % n;
    int64_t expected = 0;
    for (int64_t k = 0; k < n; ++k) {
      expected += static_cast<int64_t>(a[static_cast<size_t>(i * n + k)]) *
                  static_cast<int64_t>(b[static_cast<size_t>(k * n + j)]);
    }
    if (c[static_cast<size_t>(i * n + j)] != static_cast<float>(expected)) {
      r.detail = "wrong result at (" + std::to_string(i) + ", " + std::to_string(j) + ")";
      return r;
    }
  }
  r.pass = true;
  r.detail = "exact on " + std::to_string(n) + "^3 with " + trainer::currentGemmBackend();
  return r;
}

CheckResult checkAllReduce(Communicator& host, size_t bytes, int repeats, std::chrono::milliseconds timeout) {
  const size_t count = std::max<size_t>(bytes / sizeof(int32_t), 1);
  std::vector<int32_t> in(count), out(count);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<int32_t>((i % 1000) * (host.rank() + 1));
  CheckResult r;
  const auto t0 = Clock::now();
  for (int k = 0; k < repeats; ++k) {
    const Status s = waitFor(host.allReduce(in.data(), out.data(), count, mscInt32, mscSum), timeout);
    if (!s.isOk()) {
      r.detail = "all-reduce failed: " + s.message();
      return r;
    }
  }
  const double seconds = secondsSince(t0) / repeats;
  const int n = host.size();
  r.figure = static_cast<double>(count * sizeof(int32_t)) / seconds * 2.0 * (n - 1) / std::max(n, 1) / 1e9;
  const int64_t factor = static_cast<int64_t>(n) * (n + 1) / 2;  // sum over ranks of (rank + 1)
  for (size_t i = 0; i < count; ++i) {
    if (out[i] != static_cast<int32_t>(static_cast<int64_t>(i % 1000) * factor)) {
      r.detail = "wrong sum at element " + std::to_string(i);
      return r;
    }
  }
  r.pass = true;
  r.detail = "exact over " + std::to_string(n) + " ranks, " + std::to_string(bytes >> 20) + " MiB";
  return r;
}

CheckResult checkNeighbourLink(Communicator& ring, size_t bytes, int repeats, std::chrono::milliseconds timeout) {
  const int n = ring.size(), me = ring.rank(), next = (me + 1) % n, previous = (me + n - 1) % n;
  std::vector<uint8_t> out(bytes), in(bytes);
  for (size_t i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(i * 13 + static_cast<size_t>(me));
  CheckResult r;
  const auto t0 = Clock::now();
  for (int k = 0; k < repeats; ++k) {
    const std::vector<Communicator::PointToPoint> ops{{true, out.data(), bytes, mscUint8, next},
                                                      {false, in.data(), bytes, mscUint8, previous}};
    const Status s = waitFor(ring.pointToPoint(ops), timeout);
    if (!s.isOk()) {
      r.detail = "send/recv failed: " + s.message();
      return r;
    }
  }
  r.figure = static_cast<double>(bytes) * repeats / secondsSince(t0) / 1e9;
  for (size_t i = 0; i < bytes; ++i) {
    if (in[i] != static_cast<uint8_t>(i * 13 + static_cast<size_t>(previous))) {
      r.detail = "wrong byte " + std::to_string(i) + " from the previous host";
      return r;
    }
  }
  r.pass = true;
  r.detail = "exact, " + std::to_string(bytes >> 20) + " MiB x " + std::to_string(repeats);
  return r;
}

std::vector<size_t> slowerThanPeers(const std::vector<double>& figures, double fraction) {
  if (figures.size() < 2) return {};
  std::vector<double> sorted = figures;
  std::sort(sorted.begin(), sorted.end());
  const size_t half = sorted.size() / 2;
  const double median = sorted.size() % 2 == 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
  std::vector<size_t> slow;
  for (size_t i = 0; i < figures.size(); ++i) {
    if (figures[i] < fraction * median) slow.push_back(i);
  }
  return slow;
}

}  // namespace megascale::launcher
