// Staging as a rewrite of the schedule, not a second executor: a transport that cannot read or write device
// memory (tcp, shm, udp, ucx without its CUDA support) moves a device buffer's bytes through host memory, chunk by
// chunk. A send copies each chunk of its device slice into a slot of host memory kept for its peer and sends it
// from there; a receive lands each chunk in a slot and copies it out to the device. A peer has a few slots each
// way, used in turn, so staging memory is bounded per peer whatever the message size; the executor's data flow
// (by address) makes a slot's next copy wait until its last transfer is done, and the device copies of one chunk
// overlap the wire time of the chunks beside it.
//
// Every rank cuts a transfer into the same chunks (the plan is the communicator's, the same on every rank), so
// both ends post the same messages. A rank on host buffers does not stage: ranks of one operation use buffers of
// one kind (as NCCL asks for device buffers on every rank); a mix fails with a size mismatch, never corrupts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/schedule.h"

namespace megascale::memory {

struct StagingPlan {
  size_t chunk_bytes = size_t{1} << 20;  // a transfer's piece
  size_t slots = 4;                      // per peer and direction: chunks in flight to or from one peer
  /// "4 x 1 MiB per peer and direction", for logs.
  std::string describe() const;
};

struct StagedSchedule {
  Schedule schedule;
  size_t staging_count = 0;  // elements of the staging buffer the slots need
  size_t peers = 0;          // peer-directions that got slots
};

/// `s` with every transfer staged through buffer `staging_buffer` (host memory); offsets in elements of
/// `element_bytes`. A schedule with host steps (node engine) keeps them as they are.
StagedSchedule stageTransfers(const Schedule& s, size_t element_bytes, const StagingPlan& plan, uint16_t staging_buffer);

}  // namespace megascale::memory
