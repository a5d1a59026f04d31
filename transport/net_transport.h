// Choosing and configuring the network transport from the environment, one way for every user of it: the
// communicator, the NCCL net plugin and sendrecv_perf's bare-transport baseline.
#pragma once

#include <string>

#include "transport/transport.h"

namespace megascale::transport {

/// MEGASCALE_NET_TRANSPORT's value resolved to a transport this build has: "auto" picks the fastest one built
/// (tcp until ibverbs/UCX exist). Throws Error: kUnavailable for a known but unbuilt transport, kInvalidArgument
/// for anything else; the message says what can be chosen.
std::string resolveNetTransport(const std::string& requested);

/// TransportOptions from the MEGASCALE_TCP_* / MEGASCALE_SHM_* knobs and MEGASCALE_TIMEOUT_MS. Throws Error
/// (kInvalidArgument) naming the knob that is out of range.
TransportOptions transportOptionsFromConfig();

}  // namespace megascale::transport
