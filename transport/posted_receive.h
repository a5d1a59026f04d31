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

}  // namespace megascale::transport
