// A connected send/receive pair on any transport, made and driven from one thread as NCCL does (every call is
// non-blocking), for the transport tests.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "common/status.h"
#include "transport/transport.h"

namespace megascale::transport::testing {

struct Pair {
  std::unique_ptr<SendComm> send;
  std::unique_ptr<RecvComm> recv;
};

inline Status connectPair(Transport& connecting, Listener& listener, Pair* pair, uint64_t id = 7) {
  auto connector = connecting.connect(listener.address(), id);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pair->send || !pair->recv) {
    if (!pair->send) MSC_RETURN_IF_ERROR(connector->poll(&pair->send));
    if (!pair->recv) MSC_RETURN_IF_ERROR(listener.accept(&pair->recv));
    if (std::chrono::steady_clock::now() > deadline) return Status(ErrorCode::kTimeout, "connectPair timed out");
  }
  return Status::ok();
}

/// Drives both requests (either may be null) until done; returns the sizes reported.
inline Status completeBoth(Pair& p, Request* sreq, Request* rreq, size_t* sent, size_t* received) {
  bool sdone = sreq == nullptr, rdone = rreq == nullptr;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!sdone || !rdone) {
    if (!sdone) MSC_RETURN_IF_ERROR(p.send->test(sreq, &sdone, sent));
    if (!rdone) MSC_RETURN_IF_ERROR(p.recv->test(rreq, &rdone, received));
    if (std::chrono::steady_clock::now() > deadline) return Status(ErrorCode::kTimeout, "completeBoth timed out");
  }
  return Status::ok();
}

/// One message of `sent` from p.send to p.recv under `tag`, both driven to completion; *received is resized to
/// what arrived.
inline Status sendOneMessage(Pair& p, const std::vector<uint8_t>& sent, uint32_t tag, std::vector<uint8_t>* received) {
  received->assign(sent.size(), 0);
  Request* rreq = nullptr;
  void* data = received->data();
  size_t capacity = received->size();
  MSC_RETURN_IF_ERROR(p.recv->irecv(1, &data, &capacity, &tag, nullptr, &rreq));
  Request* sreq = nullptr;
  MSC_RETURN_IF_ERROR(p.send->isend(sent.data(), sent.size(), tag, nullptr, &sreq));
  if (sreq == nullptr || rreq == nullptr) return Status(ErrorCode::kInternal, "sendOneMessage: no free request slot");
  size_t sent_bytes = 0, received_bytes = 0;
  MSC_RETURN_IF_ERROR(completeBoth(p, sreq, rreq, &sent_bytes, &received_bytes));
  received->resize(received_bytes);
  return Status::ok();
}

}  // namespace megascale::transport::testing
