#include "transport/udp/udp_send_batch.h"

#include <netinet/udp.h>

#include <cerrno>
#include <cstring>

#include "common/status.h"

namespace megascale::transport {

UdpSendBatch::UdpSendBatch(int capacity, bool gso)
    : capacity_(capacity), gso_(gso), headers_(static_cast<size_t>(capacity)),
      parts_(static_cast<size_t>(capacity) * 2), heads_(static_cast<size_t>(capacity)),
      controls_(static_cast<size_t>(capacity)) {
  messages_.reserve(static_cast<size_t>(capacity));
}

bool UdpSendBatch::joins(const Message& m, const sockaddr_in& to, size_t bytes) const {
  return gso_ && !m.closed && m.to.sin_addr.s_addr == to.sin_addr.s_addr && m.to.sin_port == to.sin_port &&
         bytes <= m.segment_bytes && m.datagrams < kMaxSegments && m.bytes + bytes <= kMaxMessageBytes;
}

void UdpSendBatch::add(const sockaddr_in& to, const void* head, size_t head_bytes, const void* payload,
                       size_t payload_bytes) {
  const auto i = static_cast<size_t>(count_++);
  std::memcpy(heads_[i].data(), head, head_bytes);
  parts_[2 * i] = iovec{heads_[i].data(), head_bytes};
  parts_[2 * i + 1] = iovec{const_cast<void*>(payload), payload_bytes};
  const size_t bytes = head_bytes + payload_bytes;
  if (!messages_.empty() && joins(messages_.back(), to, bytes)) {
    Message& m = messages_.back();
    ++m.datagrams;
    m.bytes += bytes;
    m.closed = bytes < m.segment_bytes;
    return;
  }
  messages_.push_back({to, static_cast<int>(i), 1, bytes, bytes, false});
}

void UdpSendBatch::prepare(size_t message) {
  Message& m = messages_[message];
  msghdr& h = headers_[message].msg_hdr;
  h = msghdr{};
  h.msg_name = &m.to;
  h.msg_namelen = sizeof(sockaddr_in);
  // A header-only datagram's empty payload part is harmless to the kernel: it sends nothing for it.
  h.msg_iov = &parts_[2 * static_cast<size_t>(m.first_datagram)];
  h.msg_iovlen = 2 * static_cast<size_t>(m.datagrams);
  if (m.datagrams > 1) {
    h.msg_control = controls_[message].data();
    h.msg_controllen = controls_[message].size();
    cmsghdr* c = CMSG_FIRSTHDR(&h);
    c->cmsg_level = SOL_UDP;
    c->cmsg_type = UDP_SEGMENT;
    c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
    const auto segment = static_cast<uint16_t>(m.segment_bytes);
    std::memcpy(CMSG_DATA(c), &segment, sizeof(segment));
  }
}

int UdpSendBatch::sendOneByOne(UdpSocket& socket, const Message& m) {
  int lost = 0;
  for (int d = 0; d < m.datagrams; ++d) {
    const auto i = static_cast<size_t>(m.first_datagram + d);
    if (!socket.send(m.to, parts_[2 * i].iov_base, parts_[2 * i].iov_len, parts_[2 * i + 1].iov_base,
                     parts_[2 * i + 1].iov_len)) {
      ++lost;
    }
  }
  return lost;
}

int UdpSendBatch::flush(UdpSocket& socket) {
  for (size_t k = 0; k < messages_.size(); ++k) prepare(k);
  const int total = static_cast<int>(messages_.size());
  int done = 0, lost = 0;
  while (done < total) {
    const int n = socket.sendSome(headers_.data() + done, total - done);
    if (n > 0) {
      done += n;
      continue;
    }
    if (n == -EINTR) continue;
    if (n == -EAGAIN || n == -ENOBUFS) break;  // the socket's buffer is full: what is left waits for no one
    const Message& m = messages_[static_cast<size_t>(done)];
    if (m.datagrams > 1 && (n == -EIO || n == -EINVAL || n == -EOPNOTSUPP || n == -ENOPROTOOPT)) {
      // No segmentation on this way out (no checksum offload on an older kernel, a segment above the MTU).
      gso_ = false;
      gso_refusal_ = errnoText(-n);
      lost += sendOneByOne(socket, m);
    } else {
      lost += m.datagrams;  // refused (an unreachable peer, a link down): lost
    }
    ++done;
  }
  for (int k = done; k < total; ++k) lost += messages_[static_cast<size_t>(k)].datagrams;
  messages_.clear();
  count_ = 0;
  return lost;
}

}  // namespace megascale::transport
