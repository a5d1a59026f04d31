#include "transport/address_list.h"

#include <gtest/gtest.h>

namespace megascale::transport {
namespace {

TEST(AddressList, RoundTripsInOrder) {
  const ListenerAddresses listeners{"node07", {Address::fromString("shm:host:name"), Address::fromString("tcp:10.0.0.1:5")}};
  const ListenerAddresses back = decodeAddressList(encodeAddressList(listeners), "rank 1");
  EXPECT_EQ(back.host, "node07");
  ASSERT_EQ(back.addresses.size(), 2u);
  EXPECT_EQ(back.addresses[0].asString(), "shm:host:name");
  EXPECT_EQ(back.addresses[1].asString(), "tcp:10.0.0.1:5");
  const ListenerAddresses largest{std::string(100, 'h'), std::vector<Address>(3, Address::fromString(std::string(kMaxAddressBytes, 'x')))};
  const std::string encoded = encodeAddressList(largest);
  EXPECT_EQ(encoded.size(), kMaxAddressListBytes);
  EXPECT_EQ(decodeAddressList(encoded, "rank 2").host, std::string(kMaxHostNameBytes, 'h'));
  EXPECT_THROW(encodeAddressList({"h", std::vector<Address>(4, largest.addresses[0])}), Error);
}

TEST(AddressList, RefusesMalformedBytesNamingTheRank) {
  const std::string good = encodeAddressList({"h", {Address::fromString("tcp:1.2.3.4:5")}});
  for (const std::string& bad : {std::string(), std::string("\x01h\x00", 3), std::string("\x05h", 2), good + "x",
                                 good.substr(0, good.size() - 1), std::string("\x00\x01\xff", 3) + std::string(255, 'a'),
                                 std::string("\x41", 1) + std::string(0x41, 'h') + std::string("\x01\x01t", 3)}) {
    try {
      decodeAddressList(bad, "rank 7");
      ADD_FAILURE() << "accepted " << bad.size() << " bytes";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kPeerLost);
      EXPECT_NE(std::string(e.what()).find("rank 7"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace megascale::transport
