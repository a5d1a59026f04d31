// Configuring transports from the environment, one way for every user of them: the communicator, the NCCL
// net plugin and sendrecv_perf's bare-transport baseline (which transport: registry.h).
#pragma once

#include <string>

#include "transport/transport.h"

namespace megascale::transport {

/// TransportOptions from the MEGASCALE_TCP_* / MEGASCALE_SHM_* knobs and MEGASCALE_TIMEOUT_MS. Throws Error
/// (kInvalidArgument) naming the knob that is out of range.
TransportOptions transportOptionsFromConfig();

}  // namespace megascale::transport
