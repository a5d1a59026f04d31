// The two one-way comms of the TCP transport. Each socket of a comm streams its own part of every message
// independently (see tcp_wire.h), so a stalled socket never blocks the others' progress. A comm with lazy
// stripes starts with one socket; the send side dials the others at its first large message and the listener
// hands them to the receive side through a JoinInbox.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/socket.h"
#include "transport/posted_receive.h"
#include "transport/request_pool.h"
#include "transport/tcp/tcp_dial.h"
#include "transport/transport.h"

namespace megascale::transport {

class TcpSendComm : public SendComm {
 public:
  /// How a comm that started with one socket dials the rest.
  struct LaterStripes {
    TransportOptions options;
    sockaddr_in addr;
    uint64_t local_id;
    uint64_t token;  // the connection's, which the listener finds the receive side by
    int sockets;     // the comm grows to this many
  };
  TcpSendComm(std::vector<Fd> sockets, size_t stripe_min, std::string peer, std::optional<LaterStripes> later = {});
  Status isend(const void* data, size_t size, uint32_t tag, const MemoryRegion* mr, Request** request) override;
  Status test(Request* request, bool* done, size_t* size) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;
  /// Sockets carrying data now (grows with lazy stripes).
  int liveSockets() const { return static_cast<int>(sockets_.size()); }

 private:
  struct SendRequest : Request {
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    uint8_t header[16];
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
  void startDialing();
  void progressDials();
  Status fail(const Status& cause);

  std::vector<Fd> sockets_;  // the live ones: a message is cut into at most this many parts
  std::vector<Cursor> cursors_;
  size_t stripe_min_;
  std::string peer_;
  std::optional<LaterStripes> later_;
  struct Dial {
    TcpDial dial;
    bool done = false;  // authenticated; it goes live once the sockets before it have
  };
  std::vector<Dial> dials_;  // sockets liveSockets(), liveSockets() + 1, ... in order
  Deadline dial_deadline_{};
  Deadline next_dial_{};  // after a failed attempt, the earliest time for the next
  int dial_attempts_ = 0;
  SlotPool<SendRequest, kMaxRequests> pool_;
  std::deque<SendRequest*> queue_;  // posted and not yet sent by every socket, in order
  uint64_t head_seq_ = 0;           // sequence number of queue_.front()
  Status error_;
};

/// Where a listener leaves the later stripes of a lazily striped connection for its receive comm (they may
/// be accepted on another thread than the one using the comm).
struct JoinInbox {
  std::mutex mutex;
  std::vector<std::pair<int, Fd>> arrived;  // socket index, socket
  std::atomic<bool> any{false};
};

class TcpRecvComm : public RecvComm {
 public:
  /// `sockets` holds the comm's every socket index; with lazy stripes only socket 0 is valid at first and
  /// `inbox` brings the others.
  TcpRecvComm(std::vector<Fd> sockets, uint64_t remote_id, std::string peer, std::shared_ptr<JoinInbox> inbox = nullptr);
  Status irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags, const MemoryRegion* const* mrs,
               Request** request) override;
  Status test(Request* request, bool* done, size_t* sizes) override;
  bool appendReadiness(std::vector<pollfd>& fds) const override;
  uint64_t remoteId() const override { return remote_id_; }
  /// Sockets joined so far.
  int liveSockets() const;

 private:
  using RecvRequest = ReceiveSlot;
  struct Message {
    RecvRequest* request;
    int sub = -1;  // which buffer of the request it landed in, once its header is read
    uint64_t size = 0;
    int parts = 1;
    int sockets_left = 1;  // the parts not yet received, once the header is read
    uint8_t header[16];
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
  void adoptJoined();
  void wakeAfter(int index, size_t remaining);
  Status matchHeader(Message& m);
  Status fail(const Status& cause);

  std::vector<Fd> sockets_;  // by socket index; invalid until a lazy stripe joins
  std::vector<Cursor> cursors_;
  uint64_t remote_id_;
  std::string peer_;
  std::shared_ptr<JoinInbox> inbox_;  // null once every socket has joined
  SlotPool<RecvRequest, kMaxRequests> pool_;
  std::deque<Message> messages_;
  uint64_t head_seq_ = 0;
  Status error_;
};

}  // namespace megascale::transport
