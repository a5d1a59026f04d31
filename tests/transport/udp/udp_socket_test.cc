// One flow's socket on loopback: a batch of datagrams leaves in sendmmsg calls and arrives whole and in order,
// each with its header copied at queueing time (the sender reuses its stack) and its payload referenced, and
// with its kernel receive time and TOS (ECT(0), as every packet leaves).
#include <gtest/gtest.h>

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

// Receives until `count` datagrams or a second passes.
std::vector<std::vector<uint8_t>> receiveAll(UdpSocket& socket, int count, std::vector<int64_t>* arrived,
                                             std::vector<uint8_t>* tos) {
  std::vector<std::vector<uint8_t>> got;
  ReceiveBatch batch;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (static_cast<int>(got.size()) < count && std::chrono::steady_clock::now() < deadline) {
    const int n = socket.receive(batch);
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
  UdpSendBatch batch(32);
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
  UdpSendBatch batch(4);
  const uint8_t ack[3] = {1, 2, 3};
  batch.add(receiver.endpoint().address(), ack, sizeof(ack), nullptr, 0);
  EXPECT_EQ(batch.flush(sender), 0);
  std::vector<int64_t> arrived;
  std::vector<uint8_t> tos;
  const auto got = receiveAll(receiver, 1, &arrived, &tos);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (std::vector<uint8_t>{1, 2, 3}));
}

}  // namespace
}  // namespace megascale::transport
