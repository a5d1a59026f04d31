// The udp transport's sender and receiver halves over an in-memory lossy network on a virtual clock
// (lossy_wire.h): exact delivery under random loss and reordering with every congestion control, a cut path
// taken out of the spray and probed back in, a flap ridden out and a dead connection given up on with a clear
// error, the receiver's memory held to the window, and hostile datagrams dropped.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "congestion/starved_law.h"
#include "congestion/swift.h"
#include "transport/udp/lossy_wire.h"
#include "transport/udp/udp_congestion.h"
#include "transport/udp/udp_receiver.h"
#include "transport/udp/udp_sender.h"

namespace megascale::transport {
namespace {

using testing::LossyWire;

std::vector<UdpEndpoint> endpoints(int flows) {
  std::vector<UdpEndpoint> e;
  for (int i = 0; i < flows; ++i) e.push_back(UdpEndpoint{htonl(0x7f000001), htons(static_cast<uint16_t>(40000 + i)), 0});
  return e;
}

std::vector<uint8_t> randomBytes(size_t size, uint64_t seed) {
  std::vector<uint8_t> v(size);
  std::mt19937_64 random(seed);
  for (auto& b : v) b = static_cast<uint8_t>(random());
  return v;
}

struct Options {
  int flows = 4;
  std::string law = "none";
  double line_bps = 10e9;
  size_t window_bytes = 8 << 20;
  Picoseconds give_up = 5 * kSecond;
  Picoseconds path_down = 20 * kMillisecond;
  std::function<std::unique_ptr<congestion::SenderControl>()> control;  // instead of law's, when set
};

// A sender and a receiver joined by a LossyWire.
class Connection {
 public:
  Connection(uint64_t seed, const Options& o) : wire(seed) {
    UdpSenderSetup s;
    s.remote_connection = 2;
    s.peer = "peer 1 (test)";
    s.payload_bytes = 8192;
    s.window_bytes = o.window_bytes;
    s.line_bps = o.line_bps;
    s.rto_min = kMillisecond;
    s.give_up_after = o.give_up;
    UdpControlSetup c{o.law, o.line_bps, s.payload_bytes + udp_wire::kDataHeaderBytes, o.window_bytes, 0};
    sender = std::make_unique<UdpSender>(s, UdpPaths(o.flows, endpoints(o.flows), o.path_down),
                                         o.control ? o.control() : makeUdpControl(c),
                                         wire.end(0), [this] { ++notified; });
    UdpReceiverSetup r;
    r.remote_connection = 1;
    r.peer = "peer 0 (test)";
    receiver = std::make_unique<UdpReceiver>(r, UdpPaths(o.flows, endpoints(o.flows), o.path_down), wire.end(1),
                                             [this] { ++notified; });
    wire.connect(sender.get(), receiver.get());
  }

  // Posts a send of each size (the receives: postReceives).
  void exchange(const std::vector<size_t>& sizes, uint64_t seed) {
    const size_t first = sources.size();
    for (size_t i = 0; i < sizes.size(); ++i) {
      sources.push_back(randomBytes(sizes[i], seed + i));
      targets.emplace_back(sizes[i] + 1, 0xEE);
    }
    for (size_t i = first; i < sources.size(); ++i) {
      auto& m = outgoing.emplace_back(std::make_unique<UdpOutgoing>());
      m->data = sources[i].data();
      m->size = sources[i].size();
      m->tag = 7;
      sender->post(m.get());
    }
  }
  void postReceives() {
    for (size_t i = slots.size(); i < targets.size(); ++i) {
      auto& slot = slots.emplace_back(std::make_unique<ReceiveSlot>());
      void* data = targets[i].data();
      size_t capacity = targets[i].size();
      uint32_t tag = 7;
      ASSERT_TRUE(slot->posted.post(1, &data, &capacity, &tag).isOk());
      slot->in_use = true;
      receiver->post(slot.get());
    }
  }
  bool allDone() const {
    for (const auto& m : outgoing) {
      if (!m->done) return false;
    }
    for (const auto& s : slots) {
      if (!s->done) return false;
    }
    return slots.size() == outgoing.size();
  }
  void expectExact() const {
    for (size_t i = 0; i < sources.size(); ++i) {
      EXPECT_TRUE(std::equal(sources[i].begin(), sources[i].end(), targets[i].begin())) << "message " << i;
      EXPECT_EQ(targets[i].back(), 0xEE) << "message " << i << " wrote past its end";
      EXPECT_EQ(slots[i]->posted.sizes[0], sources[i].size());
    }
  }

  LossyWire wire;
  std::unique_ptr<UdpSender> sender;
  std::unique_ptr<UdpReceiver> receiver;
  std::vector<std::vector<uint8_t>> sources, targets;
  std::vector<std::unique_ptr<UdpOutgoing>> outgoing;
  std::vector<std::unique_ptr<ReceiveSlot>> slots;
  int notified = 0;
};

const std::vector<size_t> kSizes = {0, 1, 8191, 8192, 8193, 100000, 1 << 20, 3 << 20};

class EveryLaw : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryLaw, MessagesArriveExactAtFivePercentLossWithReordering) {
  Options o;
  o.law = GetParam();
  Connection c(1, o);
  c.wire.loss = 0.05;
  c.wire.jitter = 200 * kMicrosecond;  // paths overtake each other
  c.exchange(kSizes, 11);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 60 * kSecond))
      << GetParam() << ": " << c.sender->error().message() << " / " << c.receiver->error().message();
  EXPECT_TRUE(c.sender->error().isOk());
  EXPECT_TRUE(c.receiver->error().isOk());
  c.expectExact();
  EXPECT_GT(c.sender->retransmissions(), 0u) << "5% of the packets were lost";
  EXPECT_GT(c.notified, 0);
}

INSTANTIATE_TEST_SUITE_P(Laws, EveryLaw, ::testing::Values("none", "swift", "dcqcn", "hybrid"),
                         [](const auto& info) { return info.param; });

// Each path keeps its packets in order while the paths overtake one another by up to 200 us: a spray's
// reordering, which is not loss and must not be resent nor slow the law down.
TEST(UdpConnection, PathsOvertakingEachOtherCostNoResends) {
  for (const std::string law : {"none", "swift"}) {
    Options o;
    o.law = law;
    Connection c(12, o);
    c.wire.jitter = 200 * kMicrosecond;
    c.wire.paths_keep_order = true;
    c.exchange({8 << 20, 1 << 20}, 21);
    c.postReceives();
    ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 60 * kSecond)) << law;
    c.expectExact();
    EXPECT_EQ(c.sender->retransmissions(), 0u) << law;
    EXPECT_EQ(c.sender->lossesFromSacks(), 0u) << law;
  }
}

// The same reordering with 1% of the packets lost: those are found by SACKs (packets sent after them on their
// path arrived), not left to the retransmission timer.
TEST(UdpConnection, LossesAmongOvertakingPathsAreFoundBySacks) {
  Options o;
  Connection c(13, o);
  c.wire.jitter = 200 * kMicrosecond;
  c.wire.paths_keep_order = true;
  c.wire.loss = 0.01;
  c.exchange({16 << 20}, 22);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 60 * kSecond)) << c.sender->error().message();
  c.expectExact();
  const uint64_t data_lost = c.sender->retransmissions() - c.sender->probes();
  EXPECT_GT(c.sender->lossesFromSacks(), 0u);
  EXPECT_GE(c.sender->lossesFromSacks() * 10, data_lost * 9) << "retransmissions " << c.sender->retransmissions()
                                                              << ", timeouts " << c.sender->timeouts();
}

TEST(UdpConnection, EcnMarksSlowTheEcnLawsDown) {
  for (const std::string law : {"dcqcn", "hybrid"}) {
    Options o;
    o.law = law;
    Connection c(2, o);
    c.wire.tos = 0x03;  // every packet arrives CE-marked
    const double rate_before = c.sender->control().rateBps(), window_before = c.sender->control().windowPackets();
    c.exchange({4 << 20}, 3);
    c.postReceives();
    ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 60 * kSecond)) << law;
    c.expectExact();
    EXPECT_TRUE(c.sender->control().rateBps() < rate_before || c.sender->control().windowPackets() < window_before)
        << law << " ignored the congestion marks";
  }
}

TEST(UdpConnection, ACutPathLeavesTheSprayWithinTensOfMillisecondsAndIsProbedBackIn) {
  Options o;
  o.line_bps = 1e9;  // 16 MiB take 134 ms: traffic flows while the cut path is judged
  Connection c(3, o);
  c.wire.cut_flows = {2};
  c.exchange({16 << 20}, 5);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return !c.sender->paths().up(2); }, kSecond));
  EXPECT_LT(c.wire.now(), 50 * kMillisecond) << "the cut path should leave the spray within 50 ms";
  EXPECT_EQ(c.sender->paths().upCount(), 3);
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 60 * kSecond)) << c.sender->error().message();
  c.expectExact();
  c.wire.cut_flows.clear();  // repaired: the next probe finds it
  c.exchange({1 << 20}, 6);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return c.sender->paths().up(2); }, kSecond));
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 60 * kSecond));
  c.expectExact();
}

TEST(UdpConnection, AFlapShorterThanTheBudgetIsRiddenOut) {
  Options o;
  o.give_up = 500 * kMillisecond;
  Connection c(4, o);
  c.exchange({16 << 20}, 7);
  c.postReceives();
  c.wire.runUntil([&] { return c.receiver->heldBytes() > 0 || c.sender->packetsSent() > 100; }, kSecond);
  c.wire.cut_flows = {0, 1, 2, 3};
  c.wire.runUntil([] { return false; }, 300 * kMillisecond);  // every path down for 300 ms
  c.wire.cut_flows.clear();
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 60 * kSecond)) << c.sender->error().message();
  EXPECT_TRUE(c.sender->error().isOk()) << c.sender->error().message();
  c.expectExact();
}

TEST(UdpConnection, ANetworkDeadLongerThanTheBudgetFailsNamingThePeer) {
  Options o;
  o.give_up = 200 * kMillisecond;
  Connection c(5, o);
  c.wire.cut_flows = {0, 1, 2, 3};
  c.exchange({1 << 20}, 8);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return !c.sender->error().isOk(); }, 10 * kSecond));
  const Status& s = c.sender->error();
  EXPECT_EQ(s.code(), ErrorCode::kPeerLost);
  EXPECT_NE(s.message().find("peer 1 (test)"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("MEGASCALE_UDP_GIVE_UP_MS=200"), std::string::npos) << s.message();
  EXPECT_GE(c.wire.now(), 200 * kMillisecond);
  EXPECT_LT(c.wire.now(), 2 * kSecond) << "gave up long after the budget";
  EXPECT_GT(c.notified, 0) << "the comm must hear of the failure";
}

TEST(UdpConnection, TheReceiverHoldsNoMoreThanTheWindowUntilItPosts) {
  Options o;
  o.window_bytes = 256 << 10;
  Connection c(6, o);
  c.exchange({4 << 20}, 9);
  c.wire.runUntil([] { return false; }, 200 * kMillisecond);  // no receive posted yet
  EXPECT_GT(c.receiver->heldBytes(), 0u);
  EXPECT_LE(c.receiver->heldBytes(), o.window_bytes);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 60 * kSecond)) << c.sender->error().message();
  c.expectExact();
  EXPECT_EQ(c.receiver->heldBytes(), 0u);
}

// A receiver that gets to its packets late (a busy host) says so in its acknowledgements: the round trip the
// control law sees is the network's, not the receiver's scheduling delay, so swift does not shrink its window
// for a queue that is not there.
TEST(UdpConnection, TheReceiversOwnDelayIsLeftOutOfTheRoundTripTheLawSees) {
  Options o;
  o.law = "swift";
  o.flows = 1;
  Connection c(11, o);
  c.wire.jitter = 0;
  c.wire.host_delay[1] = 2 * kMillisecond;  // the receiver; the wire's two ways take 100 us
  c.exchange({4 << 20}, 5);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 20 * kSecond));
  c.expectExact();
  const auto& swift = dynamic_cast<const congestion::Swift&>(c.sender->control());
  EXPECT_GE(swift.smoothedRtt(), 100 * kMicrosecond);
  EXPECT_LT(swift.smoothedRtt(), 300 * kMicrosecond) << "the receiver's 2 ms would be part of it";
}

// A delay spike longer than the RTO but shorter than twice it (a descheduled engine, a queue that briefly grew):
// the first expiry sends one probe and the acknowledgements that follow end it; no timeout reaches the control
// law, which would halve the rate for a packet that was never lost.
TEST(UdpConnection, ADelaySpikeCostsAProbeNotATimeout) {
  Options o;
  o.law = "swift";
  Connection c(12, o);
  c.wire.jitter = 0;
  c.exchange({16 << 20}, 5);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return c.sender->packetsSent() > 300; }, 10 * kSecond));
  c.wire.delay = 1500 * kMicrosecond;  // the RTO's floor is 1 ms
  c.wire.runUntil([] { return false; }, 2 * kMillisecond);
  c.wire.delay = 50 * kMicrosecond;
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 20 * kSecond));
  c.expectExact();
  EXPECT_GT(c.sender->probes(), 0u) << "the spike outlasted the RTO";
  EXPECT_EQ(c.sender->timeouts(), 0u);
}

// The sender goes by the pacing gap its law sets now, not the one it set when the last packet left: a law
// starved to one packet in 100 ms that opens at the first acknowledgement gets the rest of a 1 MiB message out
// at the line rate at once, not 100 ms later.
TEST(UdpConnection, TheNextPacketGoesByThePacingGapTheLawSetsNow) {
  Options o;
  o.flows = 1;
  o.control = [] { return std::make_unique<megascale::testing::StarvedLaw>(10e9, 100 * kMillisecond, 1); };
  Connection c(13, o);
  c.wire.jitter = 0;
  c.exchange({1 << 20}, 5);
  c.postReceives();
  EXPECT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 20 * kMillisecond));
  c.expectExact();
}

// A lost tail - the last packets of a message, no later one to reveal them by SACK - is recovered by the probe
// and the timeouts after it, and the message completes.
TEST(UdpConnection, ALostTailIsRecoveredByTheProbeAndTheTimeouts) {
  Options o;
  o.law = "swift";
  o.flows = 1;
  Connection c(13, o);
  c.wire.jitter = 0;
  c.exchange({1 << 20}, 5);
  c.postReceives();
  ASSERT_TRUE(c.wire.runUntil([&] { return c.sender->packetsSent() > 100; }, 10 * kSecond));
  c.wire.loss = 1.0;  // everything in flight now and for the next 3 ms is lost
  c.wire.runUntil([] { return false; }, 3 * kMillisecond);
  c.wire.loss = 0;
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 20 * kSecond));
  c.expectExact();
  EXPECT_GT(c.sender->probes(), 0u);
  EXPECT_GT(c.sender->timeouts(), 0u) << "a probe alone cannot bring back a lost window";
}

// A datagram naming this connection but lying about its piece: each is dropped and counted, none is written.
TEST(UdpConnection, DatagramsThatLieAboutTheirPieceAreDroppedNotTrusted) {
  Options o;
  Connection c(7, o);
  c.exchange({100}, 13);  // the receive exists: a lie that got through would write into it
  c.postReceives();
  struct Lie {
    uint64_t seq, message, size, offset;
    uint32_t bytes;       // claimed
    size_t payload;       // carried
  };
  const Lie lies[] = {
      {0, 0, 100, 200, 10, 10},                     // offset beyond the message
      {0, 0, 100, 95, 10, 10},                      // runs past its end
      {0, 0, 100, 0, 50, 10},                       // claims more bytes than it carries
      {0, 0, uint64_t{1} << 41, 0, 10, 10},         // a message larger than any allowed
      {uint64_t{1} << 30, 0, 100, 0, 10, 10},       // a sequence number far ahead of the window
      {0, uint64_t{1} << 30, 100, 0, 10, 10},       // a message number far ahead
  };
  for (const Lie& l : lies) {
    std::vector<uint8_t> packet(udp_wire::kDataHeaderBytes + l.payload, 0xAB);
    const udp_wire::Header h{udp_wire::kMagic, udp_wire::kData, 0, 0, 2, l.seq, 1};
    const udp_wire::Data d{l.message, l.size, l.offset, 7, l.bytes};
    std::memcpy(packet.data(), &h, sizeof(h));
    std::memcpy(packet.data() + sizeof(h), &d, sizeof(d));
    c.receiver->onPacket(h, packet.data(), packet.size(), 0, 0);
  }
  EXPECT_EQ(c.receiver->malformed(), std::size(lies));
  EXPECT_EQ(c.receiver->heldBytes(), 0u);
  // Random bytes behind a valid header: never a crash (ASan runs this), the real transfer still exact.
  std::mt19937_64 random(99);
  for (int i = 0; i < 2000; ++i) {
    std::vector<uint8_t> junk(sizeof(udp_wire::Header) + static_cast<size_t>(random() % 100));
    for (auto& b : junk) b = static_cast<uint8_t>(random());
    const udp_wire::Header h{udp_wire::kMagic, static_cast<uint8_t>(1 + random() % 3), static_cast<uint8_t>(random()),
                             static_cast<uint16_t>(random()), 2, (uint64_t{1} << 40) + random() % 64, 1};
    std::memcpy(junk.data(), &h, sizeof(h));
    c.receiver->onPacket(h, junk.data(), junk.size(), 0, 0);
    c.sender->onPacket(h, junk.data(), junk.size(), 0, 0);
  }
  ASSERT_TRUE(c.wire.runUntil([&] { return c.allDone(); }, 10 * kSecond));
  c.expectExact();
}

}  // namespace
}  // namespace megascale::transport
