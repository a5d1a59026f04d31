// The ibverbs transport's GID on the emulated device, whose table lists RoCE v1 first and v2 next, as a ConnectX
// does. ctest runs this once per setting (one device per process): by default, and with an explicit index, it
// takes the v2 entry and moves bytes; asked for RoCE v1 (MEGASCALE_IB_ROCE_VERSION=1 or MEGASCALE_IB_GID_INDEX=0)
// it takes index 0 - honoured - and the routed fabric refuses the connection with an error that reaches the
// connecting side too, as a real cluster's routers would drop it. MEGASCALE_IB_HCA takes the port or leaves it out (EXPECT_NO_DEVICE: the error names
// why). EXPECT_GID_INDEX, EXPECT_CONNECTS and EXPECT_NO_DEVICE say which case this run is.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "transport/ibverbs/ib_device.h"
#include "transport/ibverbs/ib_transport_or_skip.h"
#include "transport/ibverbs/ib_transport.h"
#include "transport/net_transport.h"
#include "transport/transport_pair.h"

namespace megascale::transport {
namespace {

TEST(IbGidSelection, TheTransportTakesTheGidTheKnobsAskFor) {
  if (const char* no_device = std::getenv("EXPECT_NO_DEVICE")) {
    TransportOptions options = transportOptionsFromConfig();
    try {
      IbTransport transport(options);
      FAIL() << "a device was opened although MEGASCALE_IB_HCA leaves every port out";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnavailable) << e.what();
      EXPECT_NE(std::string(e.what()).find(no_device), std::string::npos) << e.what();
    }
    return;
  }
  const char* expect_index = std::getenv("EXPECT_GID_INDEX");
  const char* expect_connects = std::getenv("EXPECT_CONNECTS");
  ASSERT_TRUE(expect_index != nullptr && expect_connects != nullptr) << "ctest sets EXPECT_GID_INDEX and EXPECT_CONNECTS";
  TransportOptions options = transportOptionsFromConfig();
  options.secret = "secret";
  options.handshake_timeout_ms = 10000;
  std::string why;
  std::unique_ptr<IbTransport> transport = testing::ibTransportOrWhy(options, &why);
  if (!transport) GTEST_SKIP() << why;
  EXPECT_EQ(IbDevice::shared(IbSettings{})->gidIndex(), std::atoi(expect_index));

  auto listener = transport->listen();
  testing::Pair pair;
  const Status connected = testing::connectPair(*transport, *listener, &pair);
  if (std::strcmp(expect_connects, "yes") != 0) {
    ASSERT_FALSE(connected.isOk()) << "a RoCE v1 queue pair crossed the routed fabric";
    // The accepting side moves its queue pairs first and answers with why; the connecting side's error carries
    // the listener's reason, not just a closed socket.
    const std::string& why = connected.message();
    EXPECT_NE(why.find("connecting to 127.0.0.1"), std::string::npos) << why;
    EXPECT_NE(why.find("the listener refused the connection"), std::string::npos) << why;
    EXPECT_NE(why.find("refused RTR"), std::string::npos) << why;
    EXPECT_NE(why.find("GID index 0"), std::string::npos) << why;
    EXPECT_EQ(connected.code(), ErrorCode::kSystem) << why;
    return;
  }
  ASSERT_TRUE(connected.isOk()) << connected.message();
  std::vector<uint8_t> sent(100000), received;
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<uint8_t>(i * 13 + 5);
  const Status moved = testing::sendOneMessage(pair, sent, 3, &received);
  ASSERT_TRUE(moved.isOk()) << moved.message();
  EXPECT_EQ(received, sent);
}

}  // namespace
}  // namespace megascale::transport
