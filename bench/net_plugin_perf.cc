#include "bench/net_plugin_perf.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "bench/p2p_layers.h"
#include "common/config.h"
#include "topology/net_interfaces.h"

namespace megascale::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kLatencyBytes = 8;   // the latency target size
constexpr size_t kBandwidthBytes = size_t{64} << 20;

// Pairs (0,1), (2,3), ...: the even rank sends (and pings), the odd one receives (and pongs); a single rank
// talks to itself through the network stack and plays both parts.
enum class Role { kSender, kReceiver, kBoth };

// A deadline for a polling loop that reads the clock once per 1024 polls: a read per poll costs more than a
// shared-memory message, and would be counted against whichever layer is measured.
class PollDeadline {
 public:
  explicit PollDeadline(Clock::time_point::duration timeout) : deadline_(Clock::now() + timeout) {}
  bool passed() { return (++polls_ & 1023u) == 0 && Clock::now() > deadline_; }

 private:
  Clock::time_point deadline_;
  unsigned polls_ = 0;
};

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Runner {
 public:
  Runner(P2pLayer& layer, Role role, int rank, Clock::time_point::duration timeout)
      : layer_(layer), role_(role), rank_(rank), timeout_(timeout) {}

  void* postSend(const void* data, size_t size, void* region) {
    return postUntilTaken([&] { return layer_.isend(data, size, region); }, "isend");
  }
  void* postRecv(void* data, size_t capacity, void* region) {
    return postUntilTaken([&] { return layer_.irecv(data, capacity, region); }, "irecv");
  }
  size_t waitSend(void* request) { return waitUntilDone(request, true); }
  size_t waitRecv(void* request) { return waitUntilDone(request, false); }

  bool sends() const { return role_ != Role::kReceiver; }
  bool receives() const { return role_ != Role::kSender; }

  /// One-way latency in us: ping-pong for a pair, send-and-receive for a rank on its own.
  double pingPong(const uint8_t* send, uint8_t* recv, size_t size, void* send_region, void* recv_region, int iters) {
    auto once = [&] {
      if (role_ == Role::kReceiver) {
        void* r = postRecv(recv, size, recv_region);
        waitRecv(r);
        waitSend(postSend(send, size, send_region));
      } else {
        // The ping leaves first, as in ucx_perftest and osu_latency: posting the pong's receive overlaps its
        // flight instead of delaying it.
        void* s = postSend(send, size, send_region);
        void* r = postRecv(recv, size, recv_region);
        waitBoth(s, r);
      }
    };
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) once();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    return us / iters / (role_ == Role::kBoth ? 1 : 2);
  }

  /// Seconds to stream `count` messages with up to `window` in flight; receives rotate over the buffers.
  double stream(const uint8_t* send, const std::vector<uint8_t*>& recvs, size_t size, void* send_region,
                const std::vector<void*>& recv_regions, int count) {
    const int window = static_cast<int>(recvs.size());
    std::vector<void*> sends_in_flight, recvs_in_flight;
    int sent = 0, received = 0, posted_sends = 0, posted_recvs = 0;
    const int want_sent = sends() ? count : 0, want_received = receives() ? count : 0;
    const auto start = Clock::now();
    PollDeadline deadline(timeout_);
    while (sent < want_sent || received < want_received) {
      if (deadline.passed()) throw Failure(where("stream") + ": timed out");
      while (posted_recvs < want_received && static_cast<int>(recvs_in_flight.size()) < window) {
        const int slot = posted_recvs % window;
        void* r = layer_.irecv(recvs[slot], size, recv_regions[slot]);
        if (r == nullptr) break;
        recvs_in_flight.push_back(r);
        ++posted_recvs;
      }
      while (posted_sends < want_sent && static_cast<int>(sends_in_flight.size()) < window) {
        void* s = layer_.isend(send, size, send_region);
        if (s == nullptr) break;
        sends_in_flight.push_back(s);
        ++posted_sends;
      }
      size_t bytes = 0;
      if (!sends_in_flight.empty() && layer_.testSend(sends_in_flight.front(), &bytes)) {
        sends_in_flight.erase(sends_in_flight.begin());
        ++sent;
      }
      if (!recvs_in_flight.empty() && layer_.testRecv(recvs_in_flight.front(), &bytes)) {
        if (bytes != size) throw Failure(where("stream") + ": received " + std::to_string(bytes) + " bytes, sent " +
                                         std::to_string(size));
        recvs_in_flight.erase(recvs_in_flight.begin());
        ++received;
      }
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  void waitBoth(void* s, void* r) {
    bool send_done = false, recv_done = false;
    PollDeadline deadline(timeout_);
    size_t bytes = 0;
    while (!send_done || !recv_done) {
      if (deadline.passed()) throw Failure(where("send/receive") + ": timed out");
      if (!send_done) send_done = layer_.testSend(s, &bytes);
      if (!recv_done) recv_done = layer_.testRecv(r, &bytes);
    }
  }

 private:
  template <typename Post>
  void* postUntilTaken(Post post, const char* operation) {
    PollDeadline deadline(timeout_);
    for (;;) {
      if (void* request = post()) return request;
      if (deadline.passed()) throw Failure(where(operation) + ": no request slot within the timeout");
    }
  }
  size_t waitUntilDone(void* request, bool send) {
    PollDeadline deadline(timeout_);
    size_t bytes = 0;
    while (!(send ? layer_.testSend(request, &bytes) : layer_.testRecv(request, &bytes))) {
      if (deadline.passed()) throw Failure(where(send ? "send" : "receive") + ": timed out");
    }
    return bytes;
  }
  std::string where(const char* operation) const {
    return "rank " + std::to_string(rank_) + " " + layer_.name() + " " + operation;
  }

  P2pLayer& layer_;
  Role role_;
  int rank_;
  Clock::time_point::duration timeout_;
};

// Finishes a bootstrap collective (they run on the communicator's worker) or throws naming it.
void completed(mscResult_t started, mscComm_t comm, const char* what) {
  if (started != mscSuccess || mscCommSynchronize(comm) != mscSuccess) {
    throw Failure(std::string(what) + " failed: " + mscGetLastError());
  }
}

// All ranks agree that a step worked, so that one rank's failure stops every rank instead of leaving them in a
// collective until the timeout.
bool allOk(bool ok, mscComm_t comm) {
  int local = ok ? 0 : 1, failed = 0;
  if (mscAllReduce(&local, &failed, 1, mscInt32, mscSum, comm) != mscSuccess || mscCommSynchronize(comm) != mscSuccess) {
    return false;
  }
  return failed == 0;
}

// True when every rank runs on this host (same host name): then loopback carries the traffic.
bool allRanksOnThisHost(mscComm_t comm) {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  const uint64_t mine = std::hash<std::string>{}(name);
  uint64_t low = mine, high = mine;
  completed(mscAllReduce(&mine, &low, 1, mscUint64, mscMin, comm), comm, "all-reduce of host names");
  completed(mscAllReduce(&mine, &high, 1, mscUint64, mscMax, comm), comm, "all-reduce of host names");
  return low == high;
}

double maxOverRanks(double value, mscComm_t comm) {
  double result = value;
  completed(mscAllReduce(&value, &result, 1, mscFloat64, mscMax, comm), comm, "all-reduce of timings");
  return result;
}

void barrier(mscComm_t comm) { completed(mscBarrier(comm), comm, "barrier"); }

// Listens, exchanges handles over the bootstrap communicator, and connects each rank to its partner.
void connectLayer(P2pLayer& layer, int rank, int nranks, int partner, mscComm_t comm,
                  Clock::time_point::duration timeout) {
  std::vector<uint8_t> mine(kP2pHandleBytes, 0), all(kP2pHandleBytes * static_cast<size_t>(nranks), 0);
  layer.listen(mine.data());
  completed(mscAllGather(mine.data(), all.data(), kP2pHandleBytes, mscUint8, comm), comm, "handle all-gather");
  const uint8_t* peer = all.data() + static_cast<size_t>(partner) * kP2pHandleBytes;
  const auto deadline = Clock::now() + timeout;
  bool connected = false, accepted = false;
  while (!connected || !accepted) {  // one thread, both directions: neither call may block (as in NCCL)
    if (Clock::now() > deadline) {
      throw Failure("rank " + std::to_string(rank) + " " + layer.name() + ": no connection with rank " +
                    std::to_string(partner) + " within the timeout");
    }
    if (!connected) connected = layer.pollConnect(peer);
    if (!accepted) accepted = layer.pollAccept();
  }
}

uint8_t patternByte(size_t i, uint64_t seed) { return static_cast<uint8_t>((i * 2654435761u + seed * 97) >> 7); }

// One layer's figures at one size: every round's, so that the best can be printed and rounds compared pairwise.
struct Rounds {
  std::vector<double> latency_us, bandwidth_gbs;
  double bestLatency() const { return *std::min_element(latency_us.begin(), latency_us.end()); }
  double bestBandwidth() const { return *std::max_element(bandwidth_gbs.begin(), bandwidth_gbs.end()); }
};

// The median over rounds of plugin / transport within each round: a round's two measurements are adjacent in
// time, so pairing them cancels the machine's drift, and the median ignores a round one side lost to a hiccup.
double medianRatio(const std::vector<double>& plugin, const std::vector<double>& transport) {
  std::vector<double> ratios;
  for (size_t r = 0; r < plugin.size() && r < transport.size(); ++r) ratios.push_back(plugin[r] / transport[r]);
  std::sort(ratios.begin(), ratios.end());
  const size_t n = ratios.size();
  return n == 0 ? 0 : n % 2 == 1 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
}

struct Buffers {
  std::vector<uint8_t> send;
  std::vector<std::vector<uint8_t>> recv;
};

// One row for one layer: its latency and bandwidth at `size`, best of the rounds it is given.
void measureLayer(P2pLayer& layer, Runner& runner, Buffers& b, size_t size, const PerfOptions& o, mscComm_t comm,
                  Rounds* rounds, int64_t* wrong) {
  void* send_region = runner.sends() ? layer.registerMemory(true, b.send.data(), std::max<size_t>(size, 1)) : nullptr;
  std::vector<void*> recv_regions(b.recv.size(), nullptr);
  std::vector<uint8_t*> recv_pointers;
  for (size_t i = 0; i < b.recv.size(); ++i) {
    recv_pointers.push_back(b.recv[i].data());
    if (runner.receives()) recv_regions[i] = layer.registerMemory(false, b.recv[i].data(), std::max<size_t>(size, 1));
  }
  for (int w = 0; w < o.warmup; ++w) runner.pingPong(b.send.data(), recv_pointers[0], size, send_region, recv_regions[0], 1);
  // Small messages repeat more, so that each figure spans milliseconds and the ranks' skew leaving the barrier
  // (tens of microseconds) stays below a percent of it; but no figure runs much past kFigureSeconds on a slow
  // path (an emulated NIC moves a few ten thousand messages a second), judged by a short ping-pong that every
  // rank agrees on.
  constexpr double kFigureSeconds = 0.25;
  auto repeats = [&](size_t bytes_per_figure, size_t most) {
    return static_cast<int>(std::clamp<size_t>(bytes_per_figure / std::max<size_t>(size, 1), o.iters,
                                               std::max<size_t>(most, o.iters)));
  };
  int ping_iters = repeats(size_t{8} << 20, 5000);
  int stream_count = repeats(size_t{64} << 20, 100000);
  if (stream_count > o.iters) {  // large messages repeat o.iters times anyway: no probe
    barrier(comm);
    const double probe_us = maxOverRanks(
        runner.pingPong(b.send.data(), recv_pointers[0], size, send_region, recv_regions[0], 8), comm);
    // A short stream too: how many messages a latency carries differs by path (a NIC pipelines them; the
    // emulated one moves about one per latency, and a guess of four made its figures run 10 s instead of 0.25).
    constexpr int kStreamProbe = 16;
    barrier(comm);
    const double stream_probe_us =
        maxOverRanks(runner.stream(b.send.data(), recv_pointers, size, send_region, recv_regions, kStreamProbe), comm) *
        1e6 / kStreamProbe;
    // Operations that fit in a figure's time: a ping-pong's iteration takes two one-way latencies.
    const auto within = [&](double per_op_us) {
      return static_cast<int>(std::min(kFigureSeconds * 1e6 / std::max(per_op_us, 1e-3), 1e9));
    };
    ping_iters = std::max(o.iters, std::min(ping_iters, within(2 * probe_us)));
    stream_count = std::max(o.iters, std::min(stream_count, within(stream_probe_us)));
  }
  barrier(comm);
  const double latency = maxOverRanks(runner.pingPong(b.send.data(), recv_pointers[0], size, send_region,
                                                      recv_regions[0], ping_iters), comm);
  barrier(comm);
  const double seconds = maxOverRanks(runner.stream(b.send.data(), recv_pointers, size, send_region, recv_regions,
                                                    stream_count), comm);
  rounds->latency_us.push_back(latency);
  rounds->bandwidth_gbs.push_back(static_cast<double>(size) * stream_count / seconds / 1e9);
  if (o.check > 0 && wrong != nullptr) {  // one checked transfer with fresh contents
    const uint64_t seed = size + 1;
    if (runner.sends()) {
      for (size_t i = 0; i < size; ++i) b.send[i] = patternByte(i, seed);
    }
    if (runner.receives()) std::memset(b.recv[0].data(), 0, b.recv[0].size());
    barrier(comm);
    void* r = runner.receives() ? runner.postRecv(b.recv[0].data(), size, recv_regions[0]) : nullptr;
    void* s = runner.sends() ? runner.postSend(b.send.data(), size, send_region) : nullptr;
    if (r != nullptr && s != nullptr) {
      runner.waitBoth(s, r);
    } else if (s != nullptr) {
      runner.waitSend(s);
    } else if (r != nullptr) {
      const size_t got = runner.waitRecv(r);
      if (got != size) *wrong += static_cast<int64_t>(std::max(got, size) - std::min(got, size));
    }
    if (runner.receives()) {
      for (size_t i = 0; i < size; ++i) *wrong += b.recv[0][i] != patternByte(i, seed) ? 1 : 0;
    }
  }
  if (send_region != nullptr) layer.deregisterMemory(true, send_region);
  for (void* region : recv_regions) {
    if (region != nullptr) layer.deregisterMemory(false, region);
  }
}

std::vector<size_t> sweep(const PerfOptions& o) {
  std::vector<size_t> sizes;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;) {
    sizes.push_back(bytes);
    size_t next = o.step_factor != 0 ? static_cast<size_t>(static_cast<double>(bytes) * o.step_factor) : bytes + o.step_bytes;
    if (next <= bytes) break;
    bytes = next;
  }
  return sizes;
}

void printVerdicts(const std::vector<size_t>& sizes, const std::vector<Rounds>& transport,
                   const std::vector<Rounds>& plugin) {
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == kBandwidthBytes) {
      const double ratio = medianRatio(plugin[i].bandwidth_gbs, transport[i].bandwidth_gbs);
      std::printf("# bandwidth at 64 MiB: plugin/transport %.3f (best %.3f vs %.3f GB/s; target >= 0.95): %s\n", ratio,
                  plugin[i].bestBandwidth(), transport[i].bestBandwidth(), ratio >= 0.95 ? "met" : "MISSED");
    }
    if (sizes[i] == kLatencyBytes) {
      const double ratio = medianRatio(plugin[i].latency_us, transport[i].latency_us);
      std::printf("# latency at 8 B: plugin/transport %.3f (best %.2f vs %.2f us; target <= 1.10): %s\n", ratio,
                  plugin[i].bestLatency(), transport[i].bestLatency(), ratio <= 1.10 ? "met" : "MISSED");
    }
  }
}

}  // namespace

int runNetPluginPerf(const PerfOptions& o, mscComm_t comm) {
  int rank = 0, nranks = 1;
  mscCommUserRank(comm, &rank);
  mscCommCount(comm, &nranks);
  if (nranks > 1 && nranks % 2 != 0) {
    std::fprintf(stderr, "sendrecv_perf --net-plugin: rank %d: needs 1 rank or an even number (pairs), not %d\n", rank,
                 nranks);
    return 2;
  }
  const Role role = nranks == 1 ? Role::kBoth : rank % 2 == 0 ? Role::kSender : Role::kReceiver;
  const int partner = nranks == 1 ? 0 : rank ^ 1;
  const auto timeout = config::timeout();

  // A benchmark never sends on the machine's outward interface unless asked: with no interface configured and
  // every rank here, both layers use loopback (set before the plugin's init reads it).
  const bool loopback_default = topology::configuredInterfaceSpec().empty() && allRanksOnThisHost(comm);
  if (loopback_default) setenv("MEGASCALE_NET_IF", "=lo", 1);

  std::unique_ptr<P2pLayer> transport, plugin;
  std::string error;
  try {
    const auto interfaces = topology::discoverInterfaces(topology::configuredInterfaceSpec());
    if (interfaces.empty()) throw Failure("no usable network interface (MEGASCALE_NET_IF / NCCL_SOCKET_IFNAME)");
    transport = makeTransportLayer(interfaces[0].ipv4);
    plugin = makePluginLayer(o.net_plugin, o.net_plugin_version);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!allOk(error.empty(), comm)) {
    std::fprintf(stderr, "sendrecv_perf: rank %d: %s\n", rank, error.empty() ? "another rank failed to start" : error.c_str());
    return 1;
  }
  std::vector<size_t> sizes = sweep(o);
  std::vector<Rounds> transport_rounds(sizes.size()), plugin_rounds(sizes.size());
  int64_t wrong_total = 0;
  try {
    connectLayer(*transport, rank, nranks, partner, comm, timeout);
    connectLayer(*plugin, rank, nranks, partner, comm, timeout);
    if (rank == 0) {
      std::printf("# sendrecv_perf --net-plugin: point to point through an NCCL net plugin and the bare transport\n"
                  "# plugin:    %s\n# transport: %s\n"
                  "# %d rank(s): %s; latency = one-way (half a ping-pong), bandwidth = a stream of messages,\n"
                  "# %d rounds alternate transport and plugin: figures are each one's best, ratios the median of the\n"
                  "# rounds' own plugin/transport ratios; sizes in bytes, times in us, GB/s = 1e9 B/s\n%s#\n",
                  plugin->description().c_str(), transport->description().c_str(), nranks,
                  nranks == 1 ? "rank 0 to itself" : "even ranks send to the next odd rank", o.net_plugin_rounds,
                  loopback_default ? "# interface: lo (all ranks on this host; MEGASCALE_NET_IF picks a NIC)\n" : "");
      std::printf("#%11s  %12s %12s  %12s %12s  %9s %9s  %7s\n", "size", "transport", "transport", "plugin", "plugin",
                  "plugin/", "plugin/", "#wrong");
      std::printf("#%11s  %12s %12s  %12s %12s  %9s %9s  %7s\n", "", "lat(us)", "bw(GB/s)", "lat(us)", "bw(GB/s)",
                  "tr lat", "tr bw", "");
      std::fflush(stdout);
    }
    Runner transport_runner(*transport, role, rank, timeout), plugin_runner(*plugin, role, rank, timeout);
    for (size_t i = 0; i < sizes.size(); ++i) {
      const size_t size = sizes[i];
      const size_t window = size <= (size_t{4} << 20) ? 8 : 2;  // enough in flight to keep the link busy
      Buffers b;
      b.send.assign(std::max<size_t>(size, 1), 0x5a);
      b.recv.assign(window, std::vector<uint8_t>(std::max<size_t>(size, 1), 0));
      int64_t wrong = 0;
      for (int round = 0; round < o.net_plugin_rounds; ++round) {
        measureLayer(*transport, transport_runner, b, size, o, comm, &transport_rounds[i], round == 0 ? &wrong : nullptr);
        measureLayer(*plugin, plugin_runner, b, size, o, comm, &plugin_rounds[i], round == 0 ? &wrong : nullptr);
      }
      int64_t all_wrong = 0;
      completed(mscAllReduce(&wrong, &all_wrong, 1, mscInt64, mscSum, comm), comm, "all-reduce of the data check");
      wrong_total += all_wrong;
      if (rank == 0) {
        const Rounds& t = transport_rounds[i];
        const Rounds& p = plugin_rounds[i];
        std::printf("%12zu  %12.2f %12.3f  %12.2f %12.3f  %9.3f %9.3f  %7s\n", size, t.bestLatency(), t.bestBandwidth(),
                    p.bestLatency(), p.bestBandwidth(), medianRatio(p.latency_us, t.latency_us),
                    medianRatio(p.bandwidth_gbs, t.bandwidth_gbs),
                    o.check > 0 ? std::to_string(all_wrong).c_str() : "N/A");
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sendrecv_perf: %s\n", e.what());
    return 1;  // the peer sees its own error (a dead connection) or the communicator's timeout
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong_total), wrong_total == 0 ? "OK" : "FAILED");
    printVerdicts(sizes, transport_rounds, plugin_rounds);
    std::fflush(stdout);
  }
  barrier(comm);
  transport->close();
  plugin->close();
  return wrong_total == 0 ? 0 : 1;
}

}  // namespace megascale::bench
