// The one-way comms of the shared-memory transport. Small messages are copied through the ring (no syscall);
// large ones are pulled by the receiver straight from the sender's buffer with process_vm_readv (one copy),
// when the kernel allows it. A Unix socket stays open beside the ring only to notice that the peer died.
#pragma once

#include <sys/types.h>

#include <deque>
#include <string>

#include "common/socket.h"
#include "transport/posted_receive.h"
#include "transport/request_pool.h"
#include "transport/shm/shm_ring.h"
#include "transport/transport.h"

namespace megascale::transport {

/// An mmap'ed ring; unmapped on destruction.
class RingMapping {
 public:
  RingMapping(void* base, size_t size) : base_(base), size_(size), ring_(base) {}
  ~RingMapping();
  RingMapping(const RingMapping&) = delete;
  RingMapping& operator=(const RingMapping&) = delete;
  shm::Ring& ring() { return ring_; }

 private:
  void* base_;
  size_t size_;
  shm::Ring ring_;
};

/// Polls the socket for EOF: the peer process exited or crashed.
bool peerHungUp(int fd);

class ShmSendComm : public SendComm {
 public:
  ShmSendComm(Fd socket, std::unique_ptr<RingMapping> mapping, size_t remote_min_bytes, std::string peer);
  Status isend(const void* data, size_t size, uint32_t tag, const MemoryRegion* mr, Request** request) override;
  Status test(Request* request, bool* done, size_t* size) override;

 private:
  struct SendRequest : Request {
    shm::Record record;
    const uint8_t* data = nullptr;
    uint64_t written = 0;  // bytes of record + inline payload in the ring so far
    uint64_t ack_needed = 0;
    bool done = false;
    bool in_use = false;
  };
  Status progress(bool* moved);

  Fd socket_;
  std::unique_ptr<RingMapping> mapping_;
  size_t remote_min_bytes_;
  std::string peer_;
  SlotPool<SendRequest, kMaxRequests> pool_;
  std::deque<SendRequest*> queue_;  // in order; the first not fully written is being written
  uint64_t remote_records_ = 0;
  uint32_t idle_tests_ = 0;
  Status error_;
};

class ShmRecvComm : public RecvComm {
 public:
  ShmRecvComm(Fd socket, std::unique_ptr<RingMapping> mapping, pid_t peer_pid, uint64_t remote_id, std::string peer);
  Status irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags, const MemoryRegion* const* mrs,
               Request** request) override;
  Status test(Request* request, bool* done, size_t* sizes) override;
  uint64_t remoteId() const override { return remote_id_; }

 private:
  using RecvRequest = ReceiveSlot;
  struct Message {
    RecvRequest* request;
    bool have_record = false;
    shm::Record record;
    int sub = -1;
    uint64_t received = 0;
  };
  Status progress(bool* moved);
  Status pullRemote(Message& m);

  Fd socket_;
  std::unique_ptr<RingMapping> mapping_;
  pid_t peer_pid_;
  uint64_t remote_id_;
  std::string peer_;
  SlotPool<RecvRequest, kMaxRequests> pool_;
  std::deque<Message> messages_;
  uint32_t idle_tests_ = 0;
  Status error_;
};

}  // namespace megascale::transport
