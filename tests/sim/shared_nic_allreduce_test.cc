// Servers whose GPUs share one NIC: the library's hierarchical all-reduce replayed whole, host steps at the
// host's rate, the NIC carrying the host's whole vector.
#include <gtest/gtest.h>

#include <stdexcept>

#include "congestion/line_rate.h"
#include "sim/shared_nic_allreduce.h"
#include "sim/topology.h"

namespace megascale::sim {
namespace {

constexpr double kPayloadBytesPerS = 100e9 * 4096 / 4160 / 8;  // 100G less 64 B of header per 4 KiB packet

SharedNicAllReduceResult run(int hosts, int per_host, uint64_t bytes, double host_bytes_per_s) {
  Network net;
  buildStar(net, hosts, LinkSpec{});
  SharedNicAllReduceSpec spec;
  spec.ranks_per_host = per_host;
  spec.bytes_per_rank = bytes;
  spec.host_bytes_per_s = host_bytes_per_s;
  return runSharedNicAllReduce(net, spec, [] { return std::make_unique<congestion::LineRate>(100e9); }, kSecond);
}

TEST(SharedNicAllReduce, EachNicCarriesItsHostsVectorAtLineRate) {
  constexpr int kHosts = 4;
  constexpr uint64_t kBytes = 8'000'000;
  const SharedNicAllReduceResult r = run(kHosts, 4, kBytes, 300e9);
  ASSERT_TRUE(r.run.finished);
  EXPECT_EQ(r.algorithm, Algorithm::kHierarchical);
  // The NIC's share: the host's vector reduce-scattered and all-gathered across the hosts, whatever the ranks.
  const double nic_seconds = 2.0 * (kHosts - 1) / kHosts * kBytes / kPayloadBytesPerS;
  const double seconds = static_cast<double>(r.run.time) / 1e12;
  EXPECT_GT(seconds, nic_seconds);
  EXPECT_LT(seconds, 1.15 * nic_seconds) << "the host's four ranks' shards share one NIC without idling it";
  EXPECT_GT(r.run.busbw_gbs, 0);
}

TEST(SharedNicAllReduce, HostStepsTakeTheirTimeAtTheHostsRate) {
  const SharedNicAllReduceResult fast = run(2, 4, 4'000'000, 300e9);
  const SharedNicAllReduceResult slow = run(2, 4, 4'000'000, 1e9);
  ASSERT_TRUE(fast.run.finished && slow.run.finished);
  EXPECT_GE(static_cast<double>(slow.run.time) / 1e12, slow.host_step_s) << "6 MB of host steps at 1 GB/s";
  EXPECT_GT(slow.run.time, fast.run.time + static_cast<Picoseconds>(0.5 * slow.host_step_s * 1e12));
}

TEST(SharedNicAllReduce, OneRankPerHostIsRefused) {
  EXPECT_THROW(run(2, 1, 1000, 300e9), std::invalid_argument);
  EXPECT_THROW(run(2, 2, 1000, 0), std::invalid_argument);
}

}  // namespace
}  // namespace megascale::sim
