#include "transport/udp/udp_send_batch.h"

#include <cstring>

namespace megascale::transport {

UdpSendBatch::UdpSendBatch(int capacity)
    : capacity_(capacity), messages_(static_cast<size_t>(capacity)), parts_(static_cast<size_t>(capacity)),
      heads_(static_cast<size_t>(capacity)), to_(static_cast<size_t>(capacity)) {}

void UdpSendBatch::add(const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                       size_t payload_bytes) {
  const auto i = static_cast<size_t>(count_++);
  std::memcpy(heads_[i].data(), head, head_bytes);
  to_[i] = to;
  parts_[i][0] = iovec{heads_[i].data(), head_bytes};
  parts_[i][1] = iovec{const_cast<void*>(payload), payload_bytes};
  msghdr& h = messages_[i].msg_hdr;
  h = msghdr{};
  h.msg_name = &to_[i];
  h.msg_namelen = sizeof(sockaddr_in);
  h.msg_iov = parts_[i].data();
  h.msg_iovlen = payload_bytes > 0 ? 2 : 1;
}

int UdpSendBatch::flush(UdpSocket& socket) {
  const int sent = socket.sendBatch(messages_.data(), count_);
  const int lost = count_ - sent;
  count_ = 0;
  return lost;
}

}  // namespace megascale::transport
