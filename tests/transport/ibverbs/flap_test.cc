// A link flap on two emulated hosts (testbed/emulated_cluster.h), each with an emulated RoCE NIC on its cable:
// the cable is pulled for 3 s in the middle of a message (MegaScale §6.3: NICs flap for seconds). With our
// defaults (MEGASCALE_IB_FLAP_MS=10000: timeout 19, 8 tries of 2.1 s) the queue pairs retransmit through it
// and the data arrives intact; with NCCL's old defaults (timeout 14, retry 7: 0.54 s in all) the send fails,
// with an error that names the peer and how long the NIC retried.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "testbed/emulated_cluster.h"
#include "testbed/host_process.h"

namespace megascale {
namespace {

using testbed::EmulatedCluster;
using Peer = testbed::HostProcess;
using Clock = std::chrono::steady_clock;

struct Outcome {
  std::string sender, receiver;
  double seconds;
};

Outcome flap(const std::string& knobs) {
  EmulatedCluster net(2);
  if (!net.ok()) return {"no cluster", "", 0};
  net.limitRate("400mbit");  // 64 MiB take ~1.3 s on the wire: the cut lands mid-message
  const std::string size = std::to_string(size_t{64} << 20);
  auto peer = [&](int host, const std::string& args) {
    return net.on(host, "env LD_LIBRARY_PATH=" MEGASCALE_EMULATED_VERBS_DIR " EMU_ROCE_NETDEVS=" +
                            EmulatedCluster::nic() + " MEGASCALE_TCP_IFADDR=" + net.address(host) + " " + knobs +
                            " " MEGASCALE_FLAP_PEER_PATH " " + args);
  };
  Peer receiver(peer(0, "recv " + size));
  const std::string address = receiver.line();
  if (address.rfind("address ", 0) != 0) return {"", address, 0};
  Peer sender(peer(1, "send " + size + " " + address.substr(8)));
  if (sender.line() != "posted" || receiver.line() != "posted") return {"not posted", "", 0};
  const auto start = Clock::now();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  net.cutLink(0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  net.restoreLink(0);
  Outcome out;
  out.sender = sender.line();
  out.receiver = receiver.line();
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

TEST(IbverbsTwoHosts, AThreeSecondFlapIsRiddenOutWithOurDefaults) {
  const std::string why = EmulatedCluster::unavailableReason();
  if (!why.empty()) GTEST_SKIP() << why;
  Outcome out = flap("");
  EXPECT_EQ(out.sender, "result ok");
  EXPECT_EQ(out.receiver, "result ok") << "the data arrived, every byte checked";
}

TEST(IbverbsTwoHosts, NcclsOldDefaultsGiveUpDuringTheFlapAndSaySo) {
  const std::string why = EmulatedCluster::unavailableReason();
  if (!why.empty()) GTEST_SKIP() << why;
  Outcome out = flap("MEGASCALE_IB_TIMEOUT=14 MEGASCALE_IB_RETRY_CNT=7");
  EXPECT_EQ(out.sender.rfind("result error peer lost", 0), 0u) << out.sender;
  EXPECT_NE(out.sender.find("transport retry counter exceeded"), std::string::npos) << out.sender;
  EXPECT_NE(out.sender.find("listener 10.214.0.1:"), std::string::npos) << "names the peer: " << out.sender;
  EXPECT_NE(out.sender.find("retried for 0.537 s"), std::string::npos) << "says how long: " << out.sender;
  EXPECT_NE(out.sender.find("MEGASCALE_IB_TIMEOUT=14"), std::string::npos) << out.sender;
  EXPECT_NE(out.receiver.rfind("result error", 0), std::string::npos) << "the receiver learns it too: " << out.receiver;
}

}  // namespace
}  // namespace megascale
