// One flow's socket on loopback: a batch of datagrams leaves in sendmmsg calls and arrives whole and in order,
// each with its header copied at queueing time (the sender reuses its stack) and its payload referenced, and
// with its kernel receive time and TOS (ECT(0), as every packet leaves). Runs of same-sized datagrams to one
// address leave as one GSO message and may come back as one GRO message: either way the same datagrams arrive.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <ctime>
#include <string>
#include <vector>

#include "transport/udp/udp_send_batch.h"
#include "transport/udp/udp_socket.h"

namespace megascale::transport {
namespace {

int64_t realtimeNs() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

// Receives until `count` datagrams or a second passes; `*messages`: how many messages the kernel handed over.
std::vector<std::vector<uint8_t>> receiveAll(UdpSocket& socket, int count, std::vector<int64_t>* arrived,
                                             std::vector<uint8_t>* tos, int* messages = nullptr) {
  std::vector<std::vector<uint8_t>> got;
  ReceiveBatch batch;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (static_cast<int>(got.size()) < count && std::chrono::steady_clock::now() < deadline) {
    const int n = socket.receive(batch);
    if (messages != nullptr) *messages += batch.messages();
    for (int i = 0; i < n; ++i) {
      got.emplace_back(batch.data(i), batch.data(i) + batch.size(i));
      arrived->push_back(batch.arrivedRealtimeNs(i));
      tos->push_back(batch.tos(i));
    }
  }
  return got;
}

TEST(UdpSendBatch, ABatchLeavesInOrderWithItsHeadersCopiedAndPayloadsReferenced) {
  UdpSocket sender("127.0.0.1", -1), receiver("127.0.0.1", -1);
  const sockaddr_in to = receiver.endpoint().address();
  UdpSendBatch batch(32, /*gso=*/true);  // no two sizes alike: nothing to coalesce
  std::vector<std::string> payloads;
  for (int i = 0; i < 40; ++i) payloads.push_back(std::string(100 + static_cast<size_t>(i) * 37, static_cast<char>('a' + i % 26)));
  const int64_t before = realtimeNs();
  int lost = 0;
  for (int i = 0; i < 40; ++i) {
    if (batch.full()) lost += batch.flush(sender);
    uint8_t head[8];  // overwritten for every datagram, as a sender's stack is
    for (uint8_t& b : head) b = static_cast<uint8_t>(i);
    batch.add(to, head, sizeof(head), payloads[static_cast<size_t>(i)].data(), payloads[static_cast<size_t>(i)].size());
  }
  lost += batch.flush(sender);
  EXPECT_EQ(lost, 0);
  EXPECT_TRUE(batch.empty());
  std::vector<int64_t> arrived;
  std::vector<uint8_t> tos;
  const auto got = receiveAll(receiver, 40, &arrived, &tos);
  ASSERT_EQ(got.size(), 40u);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), 8 + payloads[i].size()) << i;
    for (int k = 0; k < 8; ++k) EXPECT_EQ(got[i][static_cast<size_t>(k)], i) << "datagram " << i << "'s header";
    EXPECT_EQ(std::string(got[i].begin() + 8, got[i].end()), payloads[i]) << i;
    EXPECT_GE(arrived[i], before) << "the kernel's receive time, after the send";
    EXPECT_LE(arrived[i], realtimeNs());
    EXPECT_EQ(tos[i] & 3, 2) << "ECT(0)";
  }
}

TEST(UdpSendBatch, AHeaderOnlyDatagramHasNoPayloadPart) {
  UdpSocket sender("127.0.0.1", -1), receiver("127.0.0.1", -1);
  UdpSendBatch batch(4, /*gso=*/false);
  const uint8_t ack[3] = {1, 2, 3};
  batch.add(receiver.endpoint().address(), ack, sizeof(ack), nullptr, 0);
  EXPECT_EQ(batch.flush(sender), 0);
  std::vector<int64_t> arrived;
  std::vector<uint8_t> tos;
  const auto got = receiveAll(receiver, 1, &arrived, &tos);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (std::vector<uint8_t>{1, 2, 3}));
}

// `count` datagrams of an 8-byte header (datagram i's index in every byte) and `payload_bytes` of payload, the
// last one `last_payload_bytes`, queued on `batch` (flushed when full) to `to`; returns the datagrams lost.
int sendNumbered(UdpSendBatch& batch, UdpSocket& sender, const sockaddr_in& to, int count, const std::string& payload,
                 size_t last_payload_bytes) {
  int lost = 0;
  for (int i = 0; i < count; ++i) {
    if (batch.full()) lost += batch.flush(sender);
    uint8_t head[8];
    for (uint8_t& b : head) b = static_cast<uint8_t>(i);
    batch.add(to, head, sizeof(head), payload.data(), i + 1 == count ? last_payload_bytes : payload.size());
  }
  return lost + batch.flush(sender);
}

void expectNumbered(const std::vector<std::vector<uint8_t>>& got, int count, const std::string& payload,
                    size_t last_payload_bytes) {
  ASSERT_EQ(got.size(), static_cast<size_t>(count));
  for (size_t i = 0; i < got.size(); ++i) {
    const size_t payload_bytes = i + 1 == got.size() ? last_payload_bytes : payload.size();
    ASSERT_EQ(got[i].size(), 8 + payload_bytes) << i;
    for (int k = 0; k < 8; ++k) ASSERT_EQ(got[i][static_cast<size_t>(k)], i) << "datagram " << i << "'s header";
    EXPECT_EQ(std::string(got[i].begin() + 8, got[i].end()), payload.substr(0, payload_bytes)) << i;
  }
}

TEST(UdpSendBatch, SameSizedDatagramsLeaveAsOneMessageAndArriveAsTheyWereSent) {
  const std::string payload(1392, 'g');
  for (bool coalesced_receive : {false, true}) {
    SCOPED_TRACE(coalesced_receive ? "GRO accepted" : "GRO not accepted");
    UdpSocket sender("127.0.0.1", -1), receiver("127.0.0.1", -1);
    if (coalesced_receive) {
      ASSERT_TRUE(receiver.acceptCoalesced());
    }
    UdpSendBatch batch(64, /*gso=*/true);
    EXPECT_EQ(sendNumbered(batch, sender, receiver.endpoint().address(), 60, payload, 500), 0);  // a short last one
    EXPECT_TRUE(batch.gso()) << batch.gsoRefusal();
    std::vector<int64_t> arrived;
    std::vector<uint8_t> tos;
    int messages = 0;
    const auto got = receiveAll(receiver, 60, &arrived, &tos, &messages);
    expectNumbered(got, 60, payload, 500);
    for (uint8_t t : tos) EXPECT_EQ(t & 3, 2) << "ECT(0)";
    if (coalesced_receive) {
      EXPECT_LT(messages, 60) << "loopback keeps a GSO message whole up to a GRO socket";
    } else {
      EXPECT_EQ(messages, 60) << "a socket that did not ask for GRO gets datagrams one by one";
    }
  }
}

TEST(UdpSendBatch, RunsAreCutWhereTheAddressChangesAndHeaderOnlyDatagramsCoalesceToo) {
  UdpSocket sender("127.0.0.1", -1), a("127.0.0.1", -1), b("127.0.0.1", -1);
  UdpSendBatch batch(32, /*gso=*/true);
  for (int i = 0; i < 24; ++i) {
    const uint8_t ack[6] = {static_cast<uint8_t>(i), 1, 2, 3, 4, 5};
    batch.add((i / 4) % 2 == 0 ? a.endpoint().address() : b.endpoint().address(), ack, sizeof(ack), nullptr, 0);
  }
  EXPECT_EQ(batch.flush(sender), 0);
  std::vector<int64_t> arrived;
  std::vector<uint8_t> tos;
  const auto at_a = receiveAll(a, 12, &arrived, &tos);
  const auto at_b = receiveAll(b, 12, &arrived, &tos);
  ASSERT_EQ(at_a.size(), 12u);
  ASSERT_EQ(at_b.size(), 12u);
  for (size_t k = 0; k < 12; ++k) {
    const auto index_at = [](size_t k, int parity) { return static_cast<uint8_t>((k / 4) * 8 + static_cast<size_t>(parity) * 4 + k % 4); };
    EXPECT_EQ(at_a[k], (std::vector<uint8_t>{index_at(k, 0), 1, 2, 3, 4, 5})) << k;
    EXPECT_EQ(at_b[k], (std::vector<uint8_t>{index_at(k, 1), 1, 2, 3, 4, 5})) << k;
  }
}

TEST(UdpSendBatch, AWayOutThatCannotSegmentGetsTheDatagramsOneByOneAndCoalescingStops) {
  UdpSocket sender("127.0.0.1", -1), receiver("127.0.0.1", -1);
  // Without UDP checksums the kernel refuses to segment (EINVAL), as an older one does for a NIC without
  // checksum offload (EIO).
  const int no_checksum = 1;
  ASSERT_EQ(setsockopt(sender.fd(), SOL_SOCKET, SO_NO_CHECK, &no_checksum, sizeof(no_checksum)), 0);
  UdpSendBatch batch(16, /*gso=*/true);
  const std::string payload(1000, 'r');
  EXPECT_EQ(sendNumbered(batch, sender, receiver.endpoint().address(), 40, payload, 1000), 0)
      << "the refused message's datagrams left singly, none lost";
  EXPECT_FALSE(batch.gso());
  EXPECT_FALSE(batch.gsoRefusal().empty());
  std::vector<int64_t> arrived;
  std::vector<uint8_t> tos;
  expectNumbered(receiveAll(receiver, 40, &arrived, &tos), 40, payload, 1000);
}

}  // namespace
}  // namespace megascale::transport
