// The two one-way comms of the TCP transport. Each socket of a comm streams its own part of every message
// independently (see tcp_wire.h), so a stalled socket never blocks the others' progress.
#pragma once

#include <deque>
#include <string>
#include <vector>

#include "common/socket.h"
#include "transport/posted_receive.h"
#include "transport/transport.h"

namespace megascale::transport {

class TcpSendComm : public SendComm {
 public:
  TcpSendComm(std::vector<Fd> sockets, size_t stripe_min, std::string peer);
  Status isend(const void* data, size_t size, uint32_t tag, const MemoryRegion* mr, Request** request) override;
  Status test(Request* request, bool* done, size_t* size) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;

 private:
  struct SendRequest : Request {
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    uint8_t header[12];
    int parts = 1;
    int sockets_left = 0;
    bool done = false;
    bool in_use = false;
  };
  struct Cursor {
    uint64_t seq = 0;     // message this socket is sending
    uint64_t offset = 0;  // bytes of its segment sent so far
  };
  Status progress();
  Status progressSocket(int index);
  Status fail(const Status& cause);

  std::vector<Fd> sockets_;
  std::vector<Cursor> cursors_;
  size_t stripe_min_;
  std::string peer_;
  SendRequest pool_[kMaxRequests];
  std::deque<SendRequest*> queue_;  // posted and not yet sent by every socket, in order
  uint64_t head_seq_ = 0;           // sequence number of queue_.front()
  Status error_;
};

class TcpRecvComm : public RecvComm {
 public:
  TcpRecvComm(std::vector<Fd> sockets, size_t stripe_min, uint64_t remote_id, std::string peer);
  Status irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags, const MemoryRegion* const* mrs,
               Request** request) override;
  Status test(Request* request, bool* done, size_t* sizes) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;
  uint64_t remoteId() const override { return remote_id_; }

 private:
  using RecvRequest = ReceiveSlot;
  struct Message {
    RecvRequest* request;
    int sub = -1;  // which buffer of the request it landed in, once its header is read
    uint64_t size = 0;
    int parts = 1;
    int sockets_left = 0;
    uint8_t header[12];
  };
  struct Cursor {
    uint64_t seq = 0;
    uint64_t offset = 0;
    int wake_bytes = 1;  // the socket's SO_RCVLOWAT
  };
  // 64 KiB: at 200 Mbit/s a sleeping receiver wakes every 2.6 ms instead of at every 9000-byte packet.
  static constexpr size_t kWakeBytes = 64 << 10;
  Status progress();
  Status progressSocket(int index);
  void wakeAfter(int index, size_t remaining);
  Status matchHeader(Message& m);
  Status fail(const Status& cause);

  std::vector<Fd> sockets_;
  std::vector<Cursor> cursors_;
  size_t stripe_min_;
  uint64_t remote_id_;
  std::string peer_;
  RecvRequest pool_[kMaxRequests];
  std::deque<Message> messages_;
  uint64_t head_seq_ = 0;
  Status error_;
};

}  // namespace megascale::transport
