// Connection setup for transports whose data path is not a socket (UCX, ibverbs), as NCCL's IB transport does
// it: a TCP socket carries the job-secret handshake (common/auth.h) and one framed blob each way, the client's
// and then the server's answer to it (a UCX worker address, queue pair numbers and GIDs). The socket then stays
// with the comm as its liveness signal: it closes when the peer's process dies, which shared memory or a NIC
// may never report. Frames: u32 length | bytes, at most kMaxBlobBytes; a listener that cannot take a client
// answers with a refusal (the length's top bit set, an error code byte and the reason) instead of hanging up.
#pragma once

#include <netinet/in.h>
#include <poll.h>

#include <any>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/auth.h"
#include "common/socket.h"
#include "transport/tcp/tcp_dial.h"
#include "transport/transport.h"

namespace megascale::transport {

constexpr size_t kMaxBlobBytes = 64 * 1024;

/// An authenticated setup socket, kept for the comm's life.
class OobLink {
 public:
  OobLink() = default;
  OobLink(Fd fd, uint64_t remote_id, std::string peer);
  /// True once the peer has closed its end or its process has died (a non-blocking peek; call it rarely).
  bool peerGone() const;
  uint64_t remoteId() const { return remote_id_; }
  const std::string& peer() const { return peer_; }
  /// Readable (POLLIN) once the peer closes its end: a sleeping waiter wakes for a dead peer.
  int fd() const { return fd_.get(); }

 private:
  Fd fd_;
  uint64_t remote_id_ = 0;
  std::string peer_;
};

/// A sending comm's PeerWatch grace: a round trip's worth many times over, and short next to any timeout a
/// user sets.
constexpr std::chrono::milliseconds kSendAckGrace{500};

/// Whether the peer's setup socket is still open. A waiting test() asks often, so the answer is the kernel's
/// only every kCallsPerClockRead calls and kLivenessCheckPeriod: a syscall, or even a clock read, on every call
/// would cost more than a shared-memory message.
class PeerWatch {
 public:
  /// `grace`: how long the peer still counts as alive after its link closed. A sender gives one: a peer that
  /// took every byte and finished closes too, while the acknowledgement of the last bytes may still be on its
  /// way (a NIC's, or UCX's), so the send must not fail until it has had time to arrive.
  explicit PeerWatch(OobLink link, Clock::duration grace = Clock::duration::zero())
      : link_(std::move(link)), grace_(grace) {}
  bool alive();
  /// kPeerLost naming the peer and the operation that found it gone.
  Status lost(const std::string& what) const;
  const OobLink& link() const { return link_; }

 private:
  static constexpr unsigned kCallsPerClockRead = 256;
  OobLink link_;
  Clock::duration grace_;
  unsigned calls_ = 0;
  bool gone_ = false;
  Clock::time_point gone_at_{};
  Clock::time_point next_check_{};
};

/// One framed blob in or out over a non-blocking socket, in as many calls as it takes.
class BlobIo {
 public:
  /// `refusal`: the blob is the listener's reason for turning the client away (an error code byte and text),
  /// flagged by the length's top bit.
  void startSend(std::string blob, bool refusal = false);
  void startReceive();
  /// Moves the transfer; *done once the whole blob is through. `what` names it in errors.
  Status poll(int fd, bool* done, const std::string& what);
  short wantedEvents() const { return sending_ ? POLLOUT : POLLIN; }
  std::string& blob() { return blob_; }
  /// The blob received is a refusal (startSend's).
  bool refused() const { return refused_; }

 private:
  bool sending_ = false;
  bool refused_ = false;
  uint32_t length_ = 0;
  size_t header_done_ = 0;
  size_t body_done_ = 0;
  std::string blob_;
};

/// The client's side: dial, prove the secret, send our blob, take the server's answer.
class OobDial {
 public:
  OobDial(const TransportOptions& options, const sockaddr_in& address, uint64_t local_id, std::string blob);
  /// *done once the answer has arrived. Errors name the listener.
  Status poll(bool* done);
  bool appendReadiness(std::vector<pollfd>& fds) const;
  /// The server's answer, once done.
  const std::string& answer() { return io_.blob(); }
  OobLink release();

 private:
  sockaddr_in address_;
  TcpDial dial_;
  Fd fd_;
  BlobIo io_;
  int stage_ = 0;  // 0 dialing, 1 sending our blob, 2 reading the answer, 3 done
  std::string blob_;
  Deadline deadline_;
  int timeout_ms_;
};

/// What a listener learns of a client before it answers.
struct OobRequest {
  uint64_t remote_id;
  std::string peer;  // "peer 7 (127.0.0.1:4000)"
  const std::string& blob;
};

/// A client whose answer has gone out, with what the listener made for it when it answered.
struct OobAccepted {
  OobLink link;
  std::any state;
};

/// The server's side: a listening socket and the handshakes under way on it.
class OobServer {
 public:
  /// `owner` names the transport in logs ("ucx"). Throws Error when it cannot listen.
  OobServer(const TransportOptions& options, std::string owner);
  const sockaddr_in& bound() const { return bound_; }

  /// Accepts and moves every handshake. `answer` is called once per authenticated client with its blob and
  /// gives our blob and any state of the connection (a queue pair, a connection id), or an error, which drops
  /// that client; clients whose answer has gone out are appended to *ready with that state. Clients that fail
  /// are logged and dropped, never an error here.
  using Answer = std::function<Status(const OobRequest&, std::string* reply, std::any* state)>;
  void poll(const Answer& answer, std::vector<OobAccepted>* ready);
  bool appendReadiness(std::vector<pollfd>& fds) const;

 private:
  struct Pending {
    Fd fd;
    sockaddr_in from;
    AuthSession auth;
    Deadline deadline;
    BlobIo io;
    int stage = 0;  // 0 authenticating, 1 reading the client's blob, 2 sending the answer
    uint64_t remote_id = 0;
    std::any state;
    Status refusal;  // the answer's error, on its way to the client before it is dropped
  };
  void acceptNew();
  /// Moves one handshake; true when it is finished (ready or dropped).
  bool step(Pending& p, const Answer& answer, std::vector<OobAccepted>* ready);

  TransportOptions options_;
  std::string owner_;
  Fd fd_;
  sockaddr_in bound_{};
  std::vector<std::unique_ptr<Pending>> pending_;
};

}  // namespace megascale::transport
