// The emulated NIC: one thread per open device that moves every RC packet (UDP datagrams, rc_wire.h) and runs
// every timer. Requester: go-back-N from the oldest unacknowledged PSN, a retransmission timeout of
// 4.096 us x 2^timeout retried retry_cnt times, RNR waits retried rnr_retry times (7: forever), completions in
// order. Responder: in-order PSNs, a sequence NAK for a gap, an RNR NAK when no receive is posted, key and
// range checks on every RDMA access, READ responses, cumulative ACKs.
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "testbed/roce/emulated.h"
#include "testbed/roce/rc_wire.h"

namespace megascale::testbed::roce {

namespace {

using Clock = std::chrono::steady_clock;
using namespace wire;

constexpr uint32_t kWindowPackets = 256;   // unacknowledged packets a QP may have out
constexpr uint32_t kAckEveryPackets = 64;  // the responder acknowledges at least this often inside a message
constexpr size_t kMaxDatagram = sizeof(Header) + 4096;

Clock::duration ackTimeout(uint8_t exponent) {
  if (exponent == 0) return Clock::duration::max() / 4;  // 0: wait forever
  return std::chrono::nanoseconds(static_cast<int64_t>(4096.0 * static_cast<double>(uint64_t{1} << exponent)));
}

// The IB spec's RNR timer codes (o9-11), in microseconds; 0 means 655.36 ms.
Clock::duration rnrDelay(uint8_t code) {
  static const uint32_t us[32] = {655360, 10,   20,   30,   40,    60,    80,    120,   160,   240,   320,
                                  480,    640,  960,  1280, 1920,  2560,  3840,  5120,  7680,  10240, 15360,
                                  20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520};
  return std::chrono::microseconds(us[code & 31]);
}

bool statsWanted() {
  static const bool wanted = [] {
    const char* v = std::getenv("EMU_ROCE_STATS");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return wanted;
}

void printStats(EmuContext* c) {
  std::fprintf(stderr, "emulated RoCE %s (pid %d): %llu packets out, %llu in, %llu ack timeouts, %llu RNR NAKs "
               "and %llu sequence NAKs sent\n", c->device->device.name, static_cast<int>(getpid()),
               static_cast<unsigned long long>(c->stats.packets_out.load()),
               static_cast<unsigned long long>(c->stats.packets_in.load()),
               static_cast<unsigned long long>(c->stats.timeouts.load()),
               static_cast<unsigned long long>(c->stats.rnr_naks_sent.load()),
               static_cast<unsigned long long>(c->stats.sequence_naks_sent.load()));
}

EmuMr* findMr(EmuContext* c, uint32_t key, bool remote) {
  auto it = c->mrs.find(key & 0x7fffffffu);
  if (it == c->mrs.end()) return nullptr;
  EmuMr* m = it->second;
  return (remote ? m->mr.rkey : m->mr.lkey) == key ? m : nullptr;
}

bool inside(const EmuMr* m, uint64_t addr, uint64_t length) {
  const auto base = reinterpret_cast<uint64_t>(m->mr.addr);
  return addr >= base && length <= m->mr.length && addr - base <= m->mr.length - length;
}

// Copies between a scatter/gather list and a flat buffer at `offset` into the list. False: an lkey is wrong or
// an entry leaves its region (nothing is copied then), or the list is too short.
bool sgCopy(EmuContext* c, const std::vector<Sge>& sges, uint64_t offset, uint8_t* flat, size_t size, bool into_sges) {
  for (const Sge& s : sges) {
    EmuMr* m = findMr(c, s.lkey, false);
    if (m == nullptr || !inside(m, s.addr, s.length)) return false;
    if (into_sges && !(m->access & IBV_ACCESS_LOCAL_WRITE)) return false;
  }
  for (const Sge& s : sges) {
    if (size == 0) break;
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const size_t n = std::min<uint64_t>(size, s.length - offset);
    uint8_t* p = hostAddress(findMr(c, s.lkey, false), s.addr + offset);
    if (into_sges) {
      std::memcpy(p, flat, n);
    } else {
      std::memcpy(flat, p, n);
    }
    flat += n;
    size -= n;
    offset = 0;
  }
  return size == 0;
}

uint64_t sgLength(const std::vector<Sge>& sges) {
  uint64_t total = 0;
  for (const Sge& s : sges) total += s.length;
  return total;
}

void sendDatagram(EmuQp* q, const Header& h, const uint8_t* payload, size_t size) {
  iovec parts[2] = {{const_cast<Header*>(&h), sizeof(h)}, {const_cast<uint8_t*>(payload), size}};
  msghdr msg{};
  msg.msg_name = &q->peer;
  msg.msg_namelen = sizeof(q->peer);
  msg.msg_iov = parts;
  msg.msg_iovlen = size > 0 ? 2 : 1;
  // A full socket buffer, a link that is down, an ICMP error from an earlier datagram: the packet is lost, and
  // the requester's timer (or the peer's) brings it back, as on a lossy wire.
  (void)sendmsg(q->label_fd >= 0 ? q->label_fd : q->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  emu(q->qp.context)->stats.packets_out.fetch_add(1, std::memory_order_relaxed);
}

void sendAck(EmuQp* q, Syndrome syndrome, uint32_t psn, uint8_t rnr_timer = 0) {
  Header h{};
  h.opcode = kAck;
  h.syndrome = syndrome;
  h.rnr_timer = rnr_timer;
  h.dest_qpn = q->attr.dest_qp_num;
  h.psn = psn;
  sendDatagram(q, h, nullptr, 0);
}

ibv_wc_opcode completionOpcode(ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM: return IBV_WC_RDMA_WRITE;
    case IBV_WR_RDMA_READ: return IBV_WC_RDMA_READ;
    default: return IBV_WC_SEND;
  }
}

void completeSend(EmuQp* q, const SendWqe& w, ibv_wc_status status) {
  if (status == IBV_WC_SUCCESS && !w.signaled) return;  // sq_sig_all is folded into `signaled` at post time
  ibv_wc wc{};
  wc.wr_id = w.wr_id;
  wc.status = status;
  wc.opcode = completionOpcode(w.opcode);
  wc.byte_len = static_cast<uint32_t>(w.length);
  wc.qp_num = q->qp.qp_num;
  complete(q->qp.send_cq, wc);
}

// Fails the oldest WQE with `status` and moves the QP to ERR, flushing the rest. The QP is in ERR before the
// error completion can be polled, as on a NIC: a consumer that sees the completion and asks sees ERR.
void failRequester(EmuQp* q, ibv_wc_status status) {
  enterError(q);
  if (!q->send_queue.empty()) {
    completeSend(q, q->send_queue.front(), status);
    q->send_queue.pop_front();
  }
  flushQp(q);
}

// Retires the WQEs whose every PSN is now acknowledged (READs retire when their last response lands).
void retireAcknowledged(EmuQp* q) {
  while (!q->send_queue.empty()) {
    const SendWqe& w = q->send_queue.front();
    if (!w.numbered || psnDiff(q->una_psn, psnAdd(w.first_psn, w.packets)) < 0) break;
    completeSend(q, w, IBV_WC_SUCCESS);
    q->send_queue.pop_front();
  }
}

// The WQE that holds `psn`, numbering new WQEs as the transmit point reaches them.
SendWqe* wqeAt(EmuQp* q, uint32_t psn) {
  for (SendWqe& w : q->send_queue) {
    if (!w.numbered) {
      if (psn != q->next_psn) return nullptr;
      w.numbered = true;
      w.first_psn = q->next_psn;
      w.packets = std::max<uint32_t>(1, static_cast<uint32_t>((w.length + q->mtu - 1) / q->mtu));
      q->next_psn = psnAdd(q->next_psn, w.packets);
    }
    const int32_t k = psnDiff(psn, w.first_psn);
    if (k >= 0 && static_cast<uint32_t>(k) < w.packets) return &w;
  }
  return nullptr;
}

// Sends what the window allows from tx_psn on.
void transmit(EmuContext* c, EmuQp* q) {
  if (q->qp.state != IBV_QPS_RTS || q->rnr_waiting) return;
  uint8_t payload[4096];
  while (static_cast<uint32_t>(psnDiff(q->tx_psn, q->una_psn)) < kWindowPackets) {
    SendWqe* w = wqeAt(q, q->tx_psn);
    if (w == nullptr) break;
    const uint32_t k = static_cast<uint32_t>(psnDiff(q->tx_psn, w->first_psn));
    const uint64_t offset = uint64_t{k} * q->mtu;
    Header h{};
    h.dest_qpn = q->attr.dest_qp_num;
    h.psn = q->tx_psn;
    h.imm = w->imm;
    const bool first = k == 0, last = k + 1 == w->packets;
    if (w->opcode == IBV_WR_RDMA_READ) {
      // One request for what is still missing; its responses take the PSNs up to the WQE's end.
      h.opcode = kReadRequest;
      h.remote_addr = w->remote_addr + offset;
      h.rkey = w->rkey;
      h.length = static_cast<uint32_t>(w->length - offset);
      sendDatagram(q, h, nullptr, 0);
      q->tx_psn = psnAdd(w->first_psn, w->packets);
    } else {
      const size_t size = static_cast<size_t>(std::min<uint64_t>(q->mtu, w->length - offset));
      if (!sgCopy(c, w->sges, offset, payload, size, false)) return failRequester(q, IBV_WC_LOC_PROT_ERR);
      const bool write = w->opcode == IBV_WR_RDMA_WRITE || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
      if (write) {
        h.opcode = first && last ? kWriteOnly : first ? kWriteFirst : last ? kWriteLast : kWriteMiddle;
        h.remote_addr = w->remote_addr;
        h.rkey = w->rkey;
        h.length = static_cast<uint32_t>(w->length);
      } else {
        h.opcode = first && last ? kSendOnly : first ? kSendFirst : last ? kSendLast : kSendMiddle;
      }
      if (last && (w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)) h.flags |= kImmediate;
      if (last || psnDiff(psnAdd(q->tx_psn, 1), q->una_psn) >= static_cast<int32_t>(kWindowPackets)) h.flags |= kAckRequest;
      sendDatagram(q, h, payload, size);
      q->tx_psn = psnAdd(q->tx_psn, 1);
    }
    if (q->deadline == Clock::time_point{}) q->deadline = Clock::now() + ackTimeout(q->attr.timeout);
  }
}

void onAck(EmuQp* q, const Header& h) {
  switch (h.syndrome) {
    case kAcknowledge:
    case kSequenceNak: {
      // Both acknowledge everything before their PSN (an ACK's own PSN included).
      const uint32_t acked = h.syndrome == kAcknowledge ? psnAdd(h.psn, 1) : h.psn;
      if (psnDiff(acked, q->una_psn) > 0 && psnDiff(acked, q->tx_psn) <= 0) {
        // READs are acknowledged by their responses only: an ACK never passes an unanswered READ.
        for (const SendWqe& w : q->send_queue) {
          if (!w.numbered || psnDiff(w.first_psn, acked) >= 0) break;
          if (w.opcode == IBV_WR_RDMA_READ && psnDiff(q->una_psn, w.first_psn) >= 0) return;
        }
        q->una_psn = acked;
        q->retries = 0;
        q->deadline = q->una_psn == q->tx_psn ? Clock::time_point{} : Clock::now() + ackTimeout(q->attr.timeout);
        retireAcknowledged(q);
      }
      if (h.syndrome == kSequenceNak && psnDiff(h.psn, q->una_psn) == 0) q->tx_psn = q->una_psn;  // go back
      return;
    }
    case kRnrNak:
      if (q->attr.rnr_retry != 7 && ++q->rnr_retries > q->attr.rnr_retry) return failRequester(q, IBV_WC_RNR_RETRY_EXC_ERR);
      q->una_psn = h.psn;
      q->tx_psn = h.psn;
      q->rnr_waiting = true;
      q->deadline = Clock::now() + rnrDelay(h.rnr_timer);
      return;
    case kRemoteAccessNak: return failRequester(q, IBV_WC_REM_ACCESS_ERR);
    default: return failRequester(q, IBV_WC_REM_INV_REQ_ERR);
  }
}

void onReadResponse(EmuContext* c, EmuQp* q, const Header& h, const uint8_t* data, size_t size) {
  if (q->send_queue.empty() || psnDiff(h.psn, q->una_psn) != 0) return;  // out of order: the timer resends
  SendWqe& w = q->send_queue.front();
  if (w.opcode != IBV_WR_RDMA_READ || !w.numbered) return;
  const uint32_t k = static_cast<uint32_t>(psnDiff(h.psn, w.first_psn));
  if (!sgCopy(c, w.sges, uint64_t{k} * q->mtu, const_cast<uint8_t*>(data), size, true)) {
    return failRequester(q, IBV_WC_LOC_PROT_ERR);
  }
  q->una_psn = psnAdd(q->una_psn, 1);
  q->retries = 0;
  q->deadline = q->una_psn == q->tx_psn ? Clock::time_point{} : Clock::now() + ackTimeout(q->attr.timeout);
  retireAcknowledged(q);
}

void completeReceive(EmuQp* q, const Header& h, ibv_wc_opcode opcode, ibv_wc_status status, uint64_t length) {
  RecvWqe r = std::move(q->recv_queue.front());
  q->recv_queue.pop_front();
  ibv_wc wc{};
  wc.wr_id = r.wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.byte_len = static_cast<uint32_t>(length);
  wc.qp_num = q->qp.qp_num;
  wc.src_qp = q->attr.dest_qp_num;
  if (h.flags & kImmediate) {
    wc.wc_flags = IBV_WC_WITH_IMM;
    wc.imm_data = h.imm;
  }
  complete(q->qp.recv_cq, wc);
}

void respondToRead(EmuContext* c, EmuQp* q, const Header& h) {
  EmuMr* m = findMr(c, h.rkey, true);
  if (m == nullptr || !(m->access & IBV_ACCESS_REMOTE_READ) || !inside(m, h.remote_addr, h.length)) {
    return sendAck(q, kRemoteAccessNak, h.psn);
  }
  const uint32_t packets = std::max<uint32_t>(1, (h.length + q->mtu - 1) / q->mtu);
  for (uint32_t k = 0; k < packets; ++k) {
    Header r{};
    r.opcode = kReadResponse;
    r.dest_qpn = q->attr.dest_qp_num;
    r.psn = psnAdd(h.psn, k);
    const uint64_t offset = uint64_t{k} * q->mtu;
    const size_t size = static_cast<size_t>(std::min<uint64_t>(q->mtu, h.length - offset));
    sendDatagram(q, r, hostAddress(m, h.remote_addr + offset), size);
  }
  if (psnDiff(h.psn, q->epsn) == 0) q->epsn = psnAdd(q->epsn, packets);
}

// A request packet with the expected PSN. False: it was refused (RNR or an error NAK went out) and the PSN
// stays expected.
bool acceptRequest(EmuContext* c, EmuQp* q, const Header& h, const uint8_t* data, size_t size) {
  const bool first = h.opcode == kSendFirst || h.opcode == kSendOnly || h.opcode == kWriteFirst || h.opcode == kWriteOnly;
  const bool last = h.opcode == kSendLast || h.opcode == kSendOnly || h.opcode == kWriteLast || h.opcode == kWriteOnly;
  const bool send = h.opcode <= kSendOnly;
  if (first) {
    q->in_message = true;
    q->message_offset = 0;
    q->length_error = false;
  } else if (!q->in_message) {
    sendAck(q, kInvalidRequestNak, h.psn);
    return false;
  }
  if (send || (last && (h.flags & kImmediate))) {
    if (q->recv_queue.empty()) {
      sendAck(q, kRnrNak, h.psn, q->attr.min_rnr_timer);
      c->stats.rnr_naks_sent.fetch_add(1, std::memory_order_relaxed);
      if (first) q->in_message = false;
      return false;
    }
  }
  if (send) {
    RecvWqe& r = q->recv_queue.front();
    if (!q->length_error && q->message_offset + size > sgLength(r.sges)) q->length_error = true;
    if (!q->length_error && !sgCopy(c, r.sges, q->message_offset, const_cast<uint8_t*>(data), size, true)) {
      q->length_error = true;
    }
  } else {
    if (first) {
      EmuMr* m = findMr(c, h.rkey, true);
      if (m == nullptr || !(m->access & IBV_ACCESS_REMOTE_WRITE) || !inside(m, h.remote_addr, h.length)) {
        q->in_message = false;
        sendAck(q, kRemoteAccessNak, h.psn);
        return false;
      }
      q->write_at = hostAddress(m, h.remote_addr);
      q->write_end = q->write_at + h.length;
    }
    if (size > static_cast<size_t>(q->write_end - q->write_at)) {
      q->in_message = false;
      sendAck(q, kInvalidRequestNak, h.psn);
      return false;
    }
    std::memcpy(q->write_at, data, size);
    q->write_at += size;
  }
  q->message_offset += size;
  if (last) {
    q->in_message = false;
    if (send) {
      if (q->length_error) {
        enterError(q);
        completeReceive(q, h, IBV_WC_RECV, IBV_WC_LOC_LEN_ERR, q->message_offset);
        sendAck(q, kInvalidRequestNak, h.psn);
        flushQp(q);
        return false;
      }
      completeReceive(q, h, IBV_WC_RECV, IBV_WC_SUCCESS, q->message_offset);
    } else if (h.flags & kImmediate) {
      completeReceive(q, h, IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_SUCCESS, q->message_offset);
    }
  }
  return true;
}

void onRequest(EmuContext* c, EmuQp* q, const Header& h, const uint8_t* data, size_t size) {
  const int32_t d = psnDiff(h.psn, q->epsn);
  if (d < 0) {  // a duplicate: its ACK was lost. A READ is answered again; anything else re-acknowledged.
    if (h.opcode == kReadRequest) return respondToRead(c, q, h);
    return sendAck(q, kAcknowledge, psnAdd(q->epsn, kPsnMask));
  }
  if (d > 0) {  // a gap: ask for the missing PSN once
    if (!q->nak_sent) {
      sendAck(q, kSequenceNak, q->epsn);
      c->stats.sequence_naks_sent.fetch_add(1, std::memory_order_relaxed);
    }
    q->nak_sent = true;
    return;
  }
  if (h.opcode == kReadRequest) {
    q->nak_sent = false;
    return respondToRead(c, q, h);
  }
  if (!acceptRequest(c, q, h, data, size)) return;
  q->epsn = psnAdd(q->epsn, 1);
  q->nak_sent = false;
  if ((h.flags & kAckRequest) || (q->epsn % kAckEveryPackets) == 0) sendAck(q, kAcknowledge, psnAdd(q->epsn, kPsnMask));
}

void receive(EmuContext* c, EmuQp* q) {
  alignas(8) uint8_t buffer[kMaxDatagram + 64];
  while (true) {
    sockaddr_in from{};
    socklen_t from_len = sizeof(from);
    ssize_t n = recvfrom(q->fd, buffer, sizeof(buffer), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &from_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more
    // Not ours: too short, or from another host than the peer's (its source port is its flow label's).
    if (static_cast<size_t>(n) < sizeof(Header) || from.sin_addr.s_addr != q->peer.sin_addr.s_addr) continue;
    c->stats.packets_in.fetch_add(1, std::memory_order_relaxed);
    Header h;
    std::memcpy(&h, buffer, sizeof(h));
    if (h.dest_qpn != q->qp.qp_num) continue;
    if (q->qp.state != IBV_QPS_RTR && q->qp.state != IBV_QPS_RTS) continue;  // RESET/INIT/ERR drop everything
    const uint8_t* data = buffer + sizeof(h);
    const size_t size = static_cast<size_t>(n) - sizeof(h);
    if (h.opcode == kAck) {
      onAck(q, h);
    } else if (h.opcode == kReadResponse) {
      onReadResponse(c, q, h, data, size);
    } else if (h.opcode <= kReadRequest) {
      onRequest(c, q, h, data, size);
    }
  }
}

// Timeouts: go back to the oldest unacknowledged PSN, or fail after retry_cnt of them; the end of an RNR wait.
void expire(EmuQp* q, Clock::time_point now) {
  if (q->deadline == Clock::time_point{} || now < q->deadline || q->qp.state != IBV_QPS_RTS) return;
  if (q->rnr_waiting) {
    q->rnr_waiting = false;
    q->deadline = Clock::now() + ackTimeout(q->attr.timeout);
    return;
  }
  if (q->una_psn == q->tx_psn) {
    q->deadline = {};
    return;
  }
  emu(q->qp.context)->stats.timeouts.fetch_add(1, std::memory_order_relaxed);
  if (++q->retries > q->attr.retry_cnt) return failRequester(q, IBV_WC_RETRY_EXC_ERR);
  q->tx_psn = q->una_psn;
  q->deadline = now + ackTimeout(q->attr.timeout);
}

void run(EmuContext* c) {
  epoll_event events[64];
  Clock::time_point next_stats = Clock::now() + std::chrono::seconds(2);
  while (!c->stopping.load()) {
    if (statsWanted() && Clock::now() > next_stats) {  // also while running: a run killed for time says why too
      printStats(c);
      next_stats = Clock::now() + std::chrono::seconds(2);
    }
    int wait_ms = 100;
    {
      std::lock_guard<std::mutex> guard(c->lock);
      const Clock::time_point now = Clock::now();
      for (auto& [qpn, q] : c->qps) {
        expire(q, now);
        transmit(c, q);
        if (q->deadline != Clock::time_point{}) {
          auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(q->deadline - now).count();
          wait_ms = static_cast<int>(std::clamp<int64_t>(ms, 0, wait_ms));
        }
      }
    }
    int n = epoll_wait(c->epoll_fd, events, 64, wait_ms);
    std::lock_guard<std::mutex> guard(c->lock);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u32 == 0) {
        uint64_t ignored;
        (void)!read(c->doorbell_fd, &ignored, sizeof(ignored));
        continue;
      }
      auto it = c->qps.find(events[i].data.u32);
      if (it != c->qps.end()) receive(c, it->second);
    }
  }
}

}  // namespace

void complete(ibv_cq* cq, const ibv_wc& wc) {
  auto* q = reinterpret_cast<EmuCq*>(cq);
  bool signal = false;
  {
    std::lock_guard<std::mutex> guard(q->lock);
    q->entries.push_back(wc);
    signal = q->armed;
    q->armed = false;
  }
  if (signal && cq->channel != nullptr) {
    ibv_cq* self = cq;
    (void)!write(cq->channel->refcnt, &self, sizeof(self));
  }
}

void enterError(EmuQp* q) {
  q->qp.state = IBV_QPS_ERR;
  q->attr.qp_state = IBV_QPS_ERR;
}

void flushQp(EmuQp* q) {
  enterError(q);
  for (const SendWqe& w : q->send_queue) {
    ibv_wc wc{};
    wc.wr_id = w.wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = completionOpcode(w.opcode);
    wc.qp_num = q->qp.qp_num;
    complete(q->qp.send_cq, wc);
  }
  q->send_queue.clear();
  for (const RecvWqe& r : q->recv_queue) {
    ibv_wc wc{};
    wc.wr_id = r.wr_id;
    wc.status = IBV_WC_WR_FLUSH_ERR;
    wc.opcode = IBV_WC_RECV;
    wc.qp_num = q->qp.qp_num;
    complete(q->qp.recv_cq, wc);
  }
  q->recv_queue.clear();
  q->deadline = {};
}

void ringDoorbell(EmuContext* c) {
  uint64_t one = 1;
  (void)!write(c->doorbell_fd, &one, sizeof(one));
}

void startNic(EmuContext* c) {
  c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  c->doorbell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u32 = 0;  // queue pair numbers are never 0: their UDP port is in the top bits
  epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, c->doorbell_fd, &e);
  c->nic = std::thread(run, c);
}

void stopNic(EmuContext* c) {
  c->stopping.store(true);
  ringDoorbell(c);
  if (c->nic.joinable()) c->nic.join();
  close(c->epoll_fd);
  close(c->doorbell_fd);
  if (statsWanted()) printStats(c);
}

}  // namespace megascale::testbed::roce
