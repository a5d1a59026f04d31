// A grouped receive as transports hold it: up to kMaxRecvs buffers with tags. Each arriving message is
// matched to the first unfilled buffer with its tag; matching and its errors are the same in every transport.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "transport/transport.h"

namespace megascale::transport {

struct PostedReceive {
  int n = 0;
  uint8_t* data[kMaxRecvs];
  size_t capacity[kMaxRecvs];
  uint32_t tags[kMaxRecvs];
  size_t sizes[kMaxRecvs];
  bool matched[kMaxRecvs];
  int messages_left = 0;

  /// Fills the slots from irecv's arguments. Errors on a bad count or a null buffer.
  Status post(int count, void* const* buffers, const size_t* buffer_sizes, const uint32_t* buffer_tags);

  /// Picks the buffer for a message with this tag and size; kMismatch if none fits.
  Status match(uint32_t tag, uint64_t size, int* index);

  void copySizes(size_t* out) const {
    for (int i = 0; i < n; ++i) out[i] = sizes[i];
  }
};

/// A transport's receive request: one grouped receive and its completion.
struct ReceiveSlot : Request {
  PostedReceive posted;
  bool done = false;
  bool in_use = false;
};

/// Takes a free slot from the pool and posts the buffers into it; *slot is null when the pool is full.
template <typename Pool>
Status claimReceiveSlot(Pool& pool, int n, void* const* data, const size_t* sizes, const uint32_t* tags,
                        ReceiveSlot** slot) {
  *slot = nullptr;
  ReceiveSlot* candidate = pool.free();
  if (candidate == nullptr) return Status::ok();
  MSC_RETURN_IF_ERROR(candidate->posted.post(n, data, sizes, tags));
  candidate->done = false;
  candidate->in_use = true;
  *slot = candidate;
  return Status::ok();
}

}  // namespace megascale::transport
