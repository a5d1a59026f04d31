#include "transport/posted_receive.h"

namespace megascale::transport {

Status PostedReceive::post(int count, void* const* buffers, const size_t* buffer_sizes, const uint32_t* buffer_tags) {
  if (count < 1 || count > kMaxRecvs) {
    return Status(ErrorCode::kInvalidArgument,
                  "irecv: " + std::to_string(count) + " buffers (1.." + std::to_string(kMaxRecvs) + " allowed)");
  }
  for (int i = 0; i < count; ++i) {
    if (buffers[i] == nullptr && buffer_sizes[i] > 0) return Status(ErrorCode::kInvalidArgument, "irecv: null buffer");
  }
  n = count;
  for (int i = 0; i < count; ++i) {
    data[i] = static_cast<uint8_t*>(buffers[i]);
    capacity[i] = buffer_sizes[i];
    tags[i] = buffer_tags != nullptr ? buffer_tags[i] : 0;
    sizes[i] = 0;
    matched[i] = false;
  }
  messages_left = count;
  return Status::ok();
}

Status PostedReceive::match(uint32_t tag, uint64_t size, int* index) {
  for (int i = 0; i < n; ++i) {
    if (matched[i] || tags[i] != tag) continue;
    if (size > capacity[i]) {
      return Status(ErrorCode::kMismatch, "message of " + std::to_string(size) + " bytes (tag " + std::to_string(tag) +
                                              ") does not fit the " + std::to_string(capacity[i]) +
                                              "-byte receive buffer");
    }
    matched[i] = true;
    sizes[i] = size;
    *index = i;
    return Status::ok();
  }
  return Status(ErrorCode::kMismatch, "message with tag " + std::to_string(tag) +
                                          " matches no posted receive (operations out of order across ranks?)");
}

}  // namespace megascale::transport
