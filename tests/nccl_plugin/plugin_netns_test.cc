// Two hosts of the emulated cluster (testbed/emulated_cluster.h): a transfer through the plugin
// whose cable is pulled mid-message. Nothing tells either side, yet both must see ncclSystemError from test()
// within MEGASCALE_TIMEOUT_MS (plus keepalive's first probe), not after the kernel's ~15 minutes, and never hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "testbed/emulated_cluster.h"
#include "testbed/host_process.h"

namespace megascale {
namespace {

using testbed::EmulatedCluster;
using Peer = testbed::HostProcess;

TEST(PluginTwoHosts, APulledCableFailsBothSidesWithinTheTimeout) {
  const std::string why = EmulatedCluster::unavailableReason();
  if (!why.empty()) GTEST_SKIP() << why;
  EmulatedCluster net(2);
  ASSERT_TRUE(net.ok()) << "could not build the namespaces";
  ASSERT_TRUE(net.limitRate("200mbit"));  // 1 GiB would take ~40 s: the cut lands mid-message
  const std::string size = std::to_string(size_t{1} << 30);
  auto peer = [&](int host, const std::string& args) {
    return net.on(host, "env MEGASCALE_NET_IF==" + EmulatedCluster::nic() + " MEGASCALE_TIMEOUT_MS=2000 " +
                            MEGASCALE_HELPER_PATH " " MEGASCALE_NCCL_PLUGIN_PATH " " + args);
  };
  Peer receiver(peer(0, "recv " + size));
  const std::string handle = receiver.line();
  ASSERT_EQ(handle.rfind("handle ", 0), 0u) << handle;
  Peer sender(peer(1, "send " + size + " " + handle.substr(7)));
  ASSERT_EQ(sender.line(), "posted");
  ASSERT_EQ(receiver.line(), "posted");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // bytes are flowing
  ASSERT_TRUE(net.cutLink(0));
  const auto cut = std::chrono::steady_clock::now();
  EXPECT_EQ(sender.line(), "result 2");  // ncclSystemError: unacknowledged data for 2 s
  EXPECT_EQ(receiver.line(), "result 2");  // idle: keepalive probes go unanswered
  const auto took = std::chrono::steady_clock::now() - cut;
  EXPECT_LT(took, std::chrono::seconds(15));
  std::printf("both sides failed %.1f s after the cut (timeout 2 s)\n", std::chrono::duration<double>(took).count());
}

}  // namespace
}  // namespace megascale
