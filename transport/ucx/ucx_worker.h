// One UCP context and worker per process, shared by every ucx transport, listener and comm in it (UCX tag
// matching is per worker, so a comm's tags carry its connection id). Sharing matters: the NCCL plugin makes a
// transport per comm, a context costs milliseconds, and two workers that each hold an endpoint to the other
// pair them (UCX matches them) so that both directions ride one connection - a ping and its pong share a TCP
// socket, and its acknowledgements ride the data, as in ucx_perftest. Every call into UCX holds the worker's lock: the NCCL plugin
// listens from one thread and drives comms from another, and an uncontended lock costs nothing next to a
// message. UCX reads its own UCX_* knobs (UCX_TLS, UCX_NET_DEVICES) when the context is made.
#pragma once

#include <poll.h>
#include <ucp/api/ucp.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/socket.h"
#include "common/spin_lock.h"
#include "common/status.h"
#include "transport/ucx/ucx_api.h"

namespace megascale::transport {

class UcxWorker {
 public:
  /// This process's worker, made at the first call (and again in a forked child, which must not use its
  /// parent's). Throws Error(kUnavailable) when UCX cannot start (no usable transport under UCX_TLS).
  static std::shared_ptr<UcxWorker> shared();

  UcxWorker();
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  ucp_worker_h worker() const { return worker_; }
  SpinLock& lock() { return lock_; }

  /// A connection id unique on this worker: the high half of every tag its comm receives (lock held).
  uint32_t nextConnectionId() { return ++last_connection_id_; }

  /// This worker's address, for peers to connect to (what UCX_TLS allows: shared memory, tcp, RDMA).
  const std::string& address() const { return address_; }

  enum class Arming { kArmed, kBusy, kNoDescriptor };
  /// Readies the worker for a waiter's poll() (lock held). kArmed: eventFd() turns readable at the next event
  /// of any comm on this worker; kBusy: there is work to do now (wakeFd() is readable at once); kNoDescriptor:
  /// UCX gave none (the caller naps). A request its caller has not yet seen complete must still be looked for
  /// after kArmed: another comm's test() may have completed it.
  Arming arm();
  int eventFd() const { return event_fd_; }
  int wakeFd() const { return always_ready_.get(); }

  /// Closes an endpoint (lock held), waiting up to `flush_timeout` for what is still in flight to arrive when
  /// `flush` (a send reported done may still be on its way).
  void closeEndpoint(ucp_ep_h ep, bool flush, std::chrono::milliseconds flush_timeout);

 private:
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  SpinLock lock_;
  uint32_t last_connection_id_ = 0;
  std::string address_;
  int event_fd_ = -1;  // UCX's, closed with the worker; -1 where it gave none
  Fd always_ready_;    // an eventfd signalled once and never read: poll() returns at once
};

/// "what: UCX status text".
std::string ucxError(const std::string& what, ucs_status_t status);

}  // namespace megascale::transport
