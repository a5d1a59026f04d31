#include "transport/registry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>

#include "transport/shm/shm_transport.h"

namespace megascale::transport {
namespace {

using Names = std::vector<std::string>;

ErrorCode codeOf(const std::function<void()>& call, std::string* message) {
  try {
    call();
  } catch (const Error& e) {
    *message = e.what();
    return e.code();
  }
  return ErrorCode::kOk;
}

TEST(TransportRegistry, ListsEveryTransportBestFirstWithWhatItReaches) {
  Names names;
  for (const TransportInfo& t : transportRegistry()) names.emplace_back(t.name);
  EXPECT_EQ(names, (Names{"shm", "ibverbs", "ucx", "tcp", "udp"}));
  ASSERT_NE(findTransport("shm"), nullptr);
  EXPECT_TRUE(findTransport("shm")->same_host_only);
  EXPECT_FALSE(findTransport("tcp")->same_host_only);
  EXPECT_EQ(findTransport("tcp")->missing, nullptr);
  EXPECT_EQ(findTransport("ib"), findTransport("ibverbs")) << "NCCL's name for it";
  EXPECT_EQ(findTransport("carrier-pigeon"), nullptr);
  TransportOptions options;
  options.secret = "s";
  EXPECT_EQ(createTransport("tcp", options)->properties().name, "tcp");
  EXPECT_TRUE(createTransport("shm", options)->properties().same_host_only);
}

// Whether an RDMA device is up here (ctest runs this file once more on the emulated RoCE device).
bool rdmaDeviceUp() {
  const TransportInfo* ib = findTransport("ibverbs");
  return ib->missing == nullptr && ib->chosen_by_auto != nullptr && ib->chosen_by_auto();
}

TEST(TransportRegistry, ACommunicatorListensOnEveryBuiltTransportUnderAuto) {
  EXPECT_EQ(communicatorTransports("auto", false), rdmaDeviceUp() ? (Names{"shm", "ibverbs", "tcp"}) : (Names{"shm", "tcp"}));
  EXPECT_EQ(communicatorTransports("auto", true), (Names{"shm"}));  // no peer needs the network
  EXPECT_EQ(communicatorTransports("tcp", true), (Names{"tcp"}));
  EXPECT_EQ(communicatorTransports("shm", false), (Names{"shm"}));
  std::string message;
  for (const TransportInfo& t : transportRegistry()) {  // a transport this build lacks says what it needs
    if (t.missing == nullptr) continue;
    EXPECT_EQ(codeOf([&] { communicatorTransports(t.name, false); }, &message), ErrorCode::kUnavailable);
    EXPECT_NE(message.find(std::string("no ") + t.name + " transport"), std::string::npos) << message;
    EXPECT_NE(message.find("built: shm"), std::string::npos) << message;
  }
  EXPECT_EQ(codeOf([] { communicatorTransports("smoke-signals", false); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("expected auto or one of shm, ibverbs, ucx, tcp, udp"), std::string::npos) << message;
}

// UCX is taken only when named: under auto every communicator would pay for a UCX context.
TEST(TransportRegistry, UcxServesOnlyWhenNamed) {
  const TransportInfo* ucx = findTransport("ucx");
  ASSERT_NE(ucx, nullptr);
  EXPECT_EQ(ucx->chosen_by_auto, nullptr);
  if (ucx->missing != nullptr) GTEST_SKIP() << "built without UCX: " << ucx->missing << " [missing: libucx-dev]";
  EXPECT_EQ(communicatorTransports("ucx", false), (Names{"ucx"}));
  EXPECT_EQ(networkTransport("ucx"), "ucx");
}

// As NCCL takes its IB transport whenever it finds a device: auto takes ibverbs where an RDMA port is up.
TEST(TransportRegistry, AutoTakesIbverbsExactlyWhenAnRdmaDeviceIsUp) {
  if (findTransport("ibverbs")->missing != nullptr) GTEST_SKIP() << "built without ibverbs [missing: libibverbs-dev]";
  const bool emulated = std::getenv("EMU_ROCE_NETDEVS") != nullptr;  // the ctest entry on the emulated device
  EXPECT_EQ(rdmaDeviceUp(), emulated);
  EXPECT_EQ(networkTransport("auto"), emulated ? "ibverbs" : "tcp");
}

TEST(TransportRegistry, TheNetworkTransportIsNeverASameHostOne) {
  EXPECT_EQ(networkTransport("auto"), rdmaDeviceUp() ? "ibverbs" : "tcp");
  EXPECT_EQ(networkTransport("tcp"), "tcp");
  std::string message;
  EXPECT_EQ(codeOf([] { networkTransport("shm"); }, &message), ErrorCode::kInvalidArgument);
  EXPECT_NE(message.find("reaches only this host"), std::string::npos) << message;
  EXPECT_EQ(networkTransport("ib"), "ibverbs");
}

TEST(TransportRegistry, ATransportConnectsOnlyToItsOwnAddressesWithinReach) {
  TransportOptions options;
  options.secret = "s";
  auto shm = createTransport("shm", options);
  auto tcp = createTransport("tcp", options);
  auto shm_listener = shm->listen();
  auto tcp_listener = tcp->listen();
  EXPECT_TRUE(shm->canConnect(shm_listener->address()));
  EXPECT_FALSE(shm->canConnect(tcp_listener->address()));
  EXPECT_TRUE(tcp->canConnect(tcp_listener->address()));
  EXPECT_FALSE(tcp->canConnect(shm_listener->address()));
  // The same name on another host (or another network namespace of this kernel) is out of shm's reach.
  EXPECT_FALSE(shm->canConnect(Address::fromString("shm:another-boot-id/4026531840:megascale-shm-1-00")));
  EXPECT_TRUE(shm->canConnect(Address::fromString("shm:" + hostIdentity() + ":megascale-shm-1-00")));
  EXPECT_FALSE(tcp->canConnect(Address::fromString("tcp")));
}

}  // namespace
}  // namespace megascale::transport
