// Driving a loaded net plugin the way NCCL's proxy thread does: poll non-blocking calls until they give a
// result, each within a deadline, so that a caller (the harness, sendrecv_perf) never hangs on a plugin.
#pragma once

#include <chrono>
#include <functional>

#include "nccl_plugin/plugin_loader.h"

namespace megascale::nccl_plugin {

using Deadline = std::chrono::steady_clock::time_point;

inline Deadline deadlineIn(std::chrono::milliseconds timeout) { return std::chrono::steady_clock::now() + timeout; }

/// Which call a one-thread connection polls first (NCCL may do either; both must work).
enum class ConnectOrder { kConnectFirst, kAcceptFirst };

/// On this thread, alternating the two non-blocking calls: a send comm to the listener of `peer_handle` (which
/// connect may write into between calls; our own listener's handle connects to ourselves) and a receive comm
/// from `listen_comm`. Past the deadline: kSystemError with *send/*recv left null.
Result connectBothWays(const PluginApi& api, int dev, void* peer_handle, void* listen_comm, ConnectOrder order,
                       Deadline deadline, void** send_comm, void** recv_comm);

/// Polls connect (or accept) alone until it yields a comm: the two sides run in different threads or processes.
Result connectUntilDone(const PluginApi& api, int dev, void* handle, Deadline deadline, void** send_comm);
Result acceptUntilDone(const PluginApi& api, void* listen_comm, Deadline deadline, void** recv_comm);

/// Repeats `post` (an isend or irecv) while it returns success with a null request (no free slot yet).
Result postUntilTaken(const std::function<Result(void**)>& post, Deadline deadline, void** request);

/// Tests `request` until done; sizes as test() fills them (may be null). kSystemError if the deadline passes.
Result waitUntilDone(const PluginApi& api, void* request, int* sizes, Deadline deadline);

/// Tests a send and a receive in turn until both are done (on one thread the send may need the receive to drain
/// the socket first); `recv_sizes` gets the receive's sizes (may be null).
Result waitBothDone(const PluginApi& api, void* send_request, void* recv_request, int* recv_sizes, Deadline deadline);

}  // namespace megascale::nccl_plugin
