// Protection domains, memory regions, completion channels and queues, and queue pairs with the RC state machine
// of the InfiniBand specification (which attributes each transition needs; which transitions exist).
#include <fcntl.h>
#include <netinet/ip.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

#include "testbed/roce/emulated.h"

#undef ibv_reg_mr

using namespace megascale::testbed::roce;

namespace {

constexpr int kAccessFlagsKnown = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
                                  IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_RELAXED_ORDERING;

uint32_t nextKey(EmuContext* c) {
  std::lock_guard<std::mutex> guard(c->lock);
  return c->next_key++;
}

// Attributes the IB specification requires for each RC transition (o10-2.3 table); others are optional.
struct Transition {
  ibv_qp_state from, to;
  int required;
};
constexpr Transition kTransitions[] = {
    {IBV_QPS_RESET, IBV_QPS_INIT, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS},
    {IBV_QPS_INIT, IBV_QPS_INIT, 0},
    {IBV_QPS_INIT, IBV_QPS_RTR,
     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
         IBV_QP_MIN_RNR_TIMER},
    {IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                   IBV_QP_MAX_QP_RD_ATOMIC},
    {IBV_QPS_RTS, IBV_QPS_RTS, 0},
    {IBV_QPS_RTS, IBV_QPS_SQD, 0},
    {IBV_QPS_SQD, IBV_QPS_RTS, 0},
    {IBV_QPS_SQE, IBV_QPS_RTS, 0},
};

bool transitionAllowed(ibv_qp_state from, ibv_qp_state to, int mask) {
  if (to == IBV_QPS_RESET || to == IBV_QPS_ERR) return true;  // from any state
  for (const Transition& t : kTransitions) {
    if (t.from == from && t.to == to) return (mask & t.required) == t.required;
  }
  return false;
}

}  // namespace

extern "C" {

ibv_pd* ibv_alloc_pd(ibv_context* context) {
  auto* p = new EmuPd{};
  p->pd.context = context;
  p->pd.handle = nextKey(emu(context));
  return &p->pd;
}

int ibv_dealloc_pd(ibv_pd* pd) {
  delete reinterpret_cast<EmuPd*>(pd);
  return 0;
}

namespace {

// A region whose bytes are at `host` and which work requests address from `iova`.
ibv_mr* registerRegion(ibv_pd* pd, uint8_t* host, size_t length, uint64_t iova, unsigned int access) {
  if ((access & ~kAccessFlagsKnown) != 0) return failNull<ibv_mr>(EINVAL);
  // Remote write or atomics need local write (IB spec o10-35); real NICs refuse the same way.
  if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
    return failNull<ibv_mr>(EINVAL);
  }
  if (host == nullptr && length > 0) return failNull<ibv_mr>(EINVAL);
  auto* m = new EmuMr{};
  m->mr.context = pd->context;
  m->mr.pd = pd;
  m->mr.addr = reinterpret_cast<void*>(iova);
  m->mr.length = length;
  m->mr.handle = nextKey(emu(pd->context));
  m->mr.lkey = m->mr.handle;
  m->mr.rkey = m->mr.handle | 0x80000000u;  // distinct from every lkey: a peer using an lkey is caught
  m->access = static_cast<int>(access);
  m->host = host;
  EmuContext* c = emu(pd->context);
  std::lock_guard<std::mutex> guard(c->lock);
  c->mrs[m->mr.handle] = m;
  return &m->mr;
}

}  // namespace

ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  return registerRegion(pd, static_cast<uint8_t*>(addr), length, iova, access);
}

ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uintptr_t>(addr), static_cast<unsigned>(access));
}

// The exporter's buffer is mapped here as a NIC maps it for DMA: any mmap-able file stands in for a GPU's
// dma-buf (a memfd in tests), so device-memory registration moves real bytes without a GPU.
ibv_mr* ibv_reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd, int access) {
  if (length == 0) return failNull<ibv_mr>(EINVAL);
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t start = offset & ~(page - 1);
  const size_t bytes = static_cast<size_t>(offset - start + length);
  void* mapping = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(start));
  if (mapping == MAP_FAILED) return failNull<ibv_mr>(errno == EACCES || errno == ENODEV ? EINVAL : errno);
  ibv_mr* mr = registerRegion(pd, static_cast<uint8_t*>(mapping) + (offset - start), length, iova,
                              static_cast<unsigned>(access));
  if (mr == nullptr) {
    const int error = errno;
    munmap(mapping, bytes);
    errno = error;
    return nullptr;
  }
  auto* m = reinterpret_cast<EmuMr*>(mr);
  m->mapping = mapping;
  m->mapping_bytes = bytes;
  return mr;
}

int ibv_dereg_mr(ibv_mr* mr) {
  EmuContext* c = emu(mr->context);
  {
    std::lock_guard<std::mutex> guard(c->lock);
    c->mrs.erase(mr->handle);
  }
  auto* m = reinterpret_cast<EmuMr*>(mr);
  if (m->mapping != nullptr) munmap(m->mapping, m->mapping_bytes);
  delete m;
  return 0;
}

ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  auto* ch = new ibv_comp_channel{};
  ch->context = context;
  ch->fd = fds[0];
  ch->refcnt = fds[1];  // the write end, kept where the caller never looks (refcnt is unused otherwise here)
  return ch;
}

int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  close(channel->fd);
  close(channel->refcnt);
  delete channel;
  return 0;
}

ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int) {
  if (cqe < 1 || cqe > 65536) return failNull<ibv_cq>(EINVAL);
  auto* q = new EmuCq{};
  q->cq.context = context;
  q->cq.channel = channel;
  q->cq.cq_context = cq_context;
  q->cq.cqe = cqe;
  q->cq.handle = nextKey(emu(context));
  pthread_mutex_init(&q->cq.mutex, nullptr);
  pthread_cond_init(&q->cq.cond, nullptr);
  return &q->cq;
}

int ibv_destroy_cq(ibv_cq* cq) {
  auto* q = reinterpret_cast<EmuCq*>(cq);
  pthread_mutex_destroy(&q->cq.mutex);
  pthread_cond_destroy(&q->cq.cond);
  delete q;
  return 0;
}

int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (cqe < 1 || cqe > 65536) return fail(EINVAL);
  cq->cqe = cqe;
  return 0;
}

int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  ibv_cq* fired = nullptr;
  ssize_t n = read(channel->fd, &fired, sizeof(fired));
  if (n != static_cast<ssize_t>(sizeof(fired))) return -1;
  *cq = fired;
  *cq_context = fired->cq_context;
  return 0;
}

void ibv_ack_cq_events(ibv_cq*, unsigned int) {}

namespace {

// A UDP socket with buffers for a whole window of datagrams: an overflowing socket buffer is a lossy wire, and
// every loss costs a retransmission timeout. (FORCE passes net.core.rmem_max for root; others get what the
// limit allows.)
int queuePairSocket() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  const int buffer_bytes = 8 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof(buffer_bytes)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
  }
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer_bytes, sizeof(buffer_bytes)) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
  }
  return fd;
}

// The NIC thread reads the queue pair's datagrams from `fd` (its epoll event carries the queue pair number).
void watchSocket(EmuContext* c, int fd, uint32_t qp_num) {
  epoll_event e{};
  e.events = EPOLLIN;
  e.data.u32 = qp_num;
  epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, fd, &e);
}

void closeAll(std::vector<int>& fds) {
  for (int fd : fds) close(fd);
  fds.clear();
}

// A queue pair's receiving sockets, one per port of the device, all on one UDP port (its number carries it,
// and which of the device's ports it uses is only known at INIT): a random port of 32768..49151 free on every
// port's address, below the flow labels' ports (0xc000 and up) so a label's sending socket never finds its
// port taken by a receiving one. Empty (errno set) when none is found.
std::vector<int> bindQueuePairSockets(const EmuDevice& d) {
  static thread_local std::minstd_rand random(static_cast<unsigned>(std::random_device{}()));
  std::vector<int> fds;
  for (int attempt = 0; attempt < 64; ++attempt) {
    const auto port = htons(static_cast<uint16_t>(32768 + random() % 16384));
    bool bound = true;
    for (size_t p = 0; p < d.ports.size() && bound; ++p) {
      sockaddr_in local{};
      local.sin_family = AF_INET;
      local.sin_addr = d.ports[p].ipv4;
      local.sin_port = port;
      const int fd = queuePairSocket();
      if (fd >= 0) fds.push_back(fd);
      bound = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) == 0;
    }
    if (bound) return fds;
    const int e = errno;
    closeAll(fds);
    errno = e;
    if (e != EADDRINUSE) break;
  }
  return fds;
}

// A socket that only sends, from `sport`: queue pairs with the same label share the port (SO_REUSEPORT), as
// they share it on a real NIC. Nothing is sent to it.
int labelSocket(in_addr ipv4, uint16_t sport) {
  const int fd = queuePairSocket();
  if (fd < 0) return -1;
  const int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
  sockaddr_in local{};
  local.sin_family = AF_INET;
  local.sin_addr = ipv4;
  local.sin_port = htons(sport);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
    const int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

}  // namespace

ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* init) {
  if (init->qp_type != IBV_QPT_RC) return failNull<ibv_qp>(EOPNOTSUPP);  // RC is what the emulation implements
  if (init->send_cq == nullptr || init->recv_cq == nullptr || init->srq != nullptr) return failNull<ibv_qp>(EINVAL);
  if (init->cap.max_send_wr > 4096 || init->cap.max_recv_wr > 4096 || init->cap.max_send_sge > 16 ||
      init->cap.max_recv_sge > 16) {
    return failNull<ibv_qp>(EINVAL);
  }
  EmuContext* c = emu(pd->context);
  std::vector<int> fds = bindQueuePairSockets(*c->device);
  if (fds.empty()) return nullptr;
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  getsockname(fds.front(), reinterpret_cast<sockaddr*>(&local), &len);
  auto* q = new EmuQp{};
  q->port_fds = fds;
  q->fd = fds.front();
  q->cap = init->cap;
  q->sq_sig_all = init->sq_sig_all != 0;
  q->qp.context = pd->context;
  q->qp.qp_context = init->qp_context;
  q->qp.pd = pd;
  q->qp.send_cq = init->send_cq;
  q->qp.recv_cq = init->recv_cq;
  q->qp.qp_type = IBV_QPT_RC;
  q->qp.state = IBV_QPS_RESET;
  q->qp.handle = nextKey(c);
  q->qp.qp_num = (uint32_t{ntohs(local.sin_port)} << 8) | (q->qp.handle & 0xff);
  pthread_mutex_init(&q->qp.mutex, nullptr);
  pthread_cond_init(&q->qp.cond, nullptr);
  q->attr.qp_state = IBV_QPS_RESET;
  std::lock_guard<std::mutex> guard(c->lock);
  c->qps[q->qp.qp_num] = q;
  watchSocket(c, q->fd, q->qp.qp_num);
  return &q->qp;
}

int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int mask) {
  auto* q = reinterpret_cast<EmuQp*>(qp);
  EmuContext* c = emu(qp->context);
  std::lock_guard<std::mutex> guard(c->lock);
  const ibv_qp_state from = qp->state;
  const ibv_qp_state to = (mask & IBV_QP_STATE) ? attr->qp_state : from;
  if (!transitionAllowed(from, to, mask)) return fail(EINVAL);
  if ((mask & IBV_QP_PORT) && !c->device->hasPort(attr->port_num)) return fail(EINVAL);
  if ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags & ~kAccessFlagsKnown)) return fail(EINVAL);
  const bool infiniband = c->device->infiniband;
  // RoCE v1 (index 0) is an Ethernet frame routers do not carry; this fabric is routed, so only v2 goes.
  const uint8_t gid_index = infiniband ? 0 : kRoceV2GidIndex;
  if ((mask & IBV_QP_AV) && attr->ah_attr.is_global && attr->ah_attr.grh.sgid_index != gid_index) return fail(EINVAL);
  if ((mask & IBV_QP_AV) && !attr->ah_attr.is_global && !infiniband) return fail(EINVAL);  // RoCE needs the GRH (the GID)
  if ((mask & IBV_QP_AV) && !attr->ah_attr.is_global && attr->ah_attr.dlid == 0) return fail(EINVAL);  // no LID, no route
  if ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7) return fail(EINVAL);
  if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7) return fail(EINVAL);
  if ((mask & IBV_QP_TIMEOUT) && attr->timeout > 31) return fail(EINVAL);
  if (mask & IBV_QP_CUR_STATE) q->attr.cur_qp_state = attr->cur_qp_state;
  if (mask & IBV_QP_ACCESS_FLAGS) q->attr.qp_access_flags = attr->qp_access_flags;
  if (mask & IBV_QP_PKEY_INDEX) q->attr.pkey_index = attr->pkey_index;
  if ((mask & IBV_QP_PORT) && attr->port_num != q->port) {
    // The port's socket takes over: peers reach the queue pair at that port's address from now on.
    epoll_ctl(c->epoll_fd, EPOLL_CTL_DEL, q->fd, nullptr);
    q->port = attr->port_num;
    q->fd = q->port_fds[q->port - 1u];
    watchSocket(c, q->fd, qp->qp_num);
  }
  if (mask & IBV_QP_PORT) q->attr.port_num = attr->port_num;
  if (mask & IBV_QP_AV) q->attr.ah_attr = attr->ah_attr;
  if (mask & IBV_QP_PATH_MTU) q->attr.path_mtu = attr->path_mtu;
  if (mask & IBV_QP_TIMEOUT) q->attr.timeout = attr->timeout;
  if (mask & IBV_QP_RETRY_CNT) q->attr.retry_cnt = attr->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) q->attr.rnr_retry = attr->rnr_retry;
  if (mask & IBV_QP_RQ_PSN) q->attr.rq_psn = attr->rq_psn & 0xffffff;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) q->attr.max_rd_atomic = attr->max_rd_atomic;
  if (mask & IBV_QP_MIN_RNR_TIMER) q->attr.min_rnr_timer = attr->min_rnr_timer;
  if (mask & IBV_QP_SQ_PSN) q->attr.sq_psn = attr->sq_psn & 0xffffff;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) q->attr.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  if (mask & IBV_QP_DEST_QPN) q->attr.dest_qp_num = attr->dest_qp_num & 0xffffff;
  if (from != IBV_QPS_RTR && to == IBV_QPS_RTR) {
    // The peer's UDP endpoint: the IPv4 address in its GID (or, by LID, in this subnet), the port in its queue
    // pair number.
    sockaddr_in peer{};
    peer.sin_family = AF_INET;
    if (!q->attr.ah_attr.is_global) {
      peer.sin_addr = lidToIpv4(q->attr.ah_attr.dlid, c->device->netdev(q->port).ipv4);
    } else if (!gidToIpv4(q->attr.ah_attr.grh.dgid, &peer.sin_addr)) {
      return fail(EINVAL);
    }
    peer.sin_port = htons(static_cast<uint16_t>(q->attr.dest_qp_num >> 8));
    q->peer = peer;
    if (q->label_fd >= 0) close(q->label_fd);
    q->label_fd = -1;
    const uint32_t label = q->attr.ah_attr.is_global ? q->attr.ah_attr.grh.flow_label & 0xfffff : 0;
    // The label's port taken by a socket not of this emulation (another program's UDP): the QP sends from
    // its own port instead, as a NIC without flow-label ports would.
    if (label != 0) q->label_fd = labelSocket(c->device->netdev(q->port).ipv4, ibv_flow_label_to_udp_sport(label));
    const int tos = q->attr.ah_attr.grh.traffic_class;  // DSCP << 2 | ECN, as RoCEv2 NICs mark it
    setsockopt(q->label_fd >= 0 ? q->label_fd : q->fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
    q->mtu = 128u << q->attr.path_mtu;
    q->epsn = q->attr.rq_psn;
  }
  if (from != IBV_QPS_RTS && to == IBV_QPS_RTS) q->next_psn = q->una_psn = q->tx_psn = q->attr.sq_psn;
  q->attr.qp_state = to;
  qp->state = to;
  if (to == IBV_QPS_ERR) flushQp(q);
  if (to == IBV_QPS_RESET) {
    q->send_queue.clear();
    q->recv_queue.clear();
  }
  ringDoorbell(c);
  return 0;
}

int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int, ibv_qp_init_attr* init) {
  auto* q = reinterpret_cast<EmuQp*>(qp);
  std::lock_guard<std::mutex> guard(emu(qp->context)->lock);
  *attr = q->attr;
  attr->qp_state = qp->state;
  attr->cap = q->cap;
  std::memset(init, 0, sizeof(*init));
  init->qp_context = qp->qp_context;
  init->send_cq = qp->send_cq;
  init->recv_cq = qp->recv_cq;
  init->cap = q->cap;
  init->qp_type = qp->qp_type;
  return 0;
}

int ibv_destroy_qp(ibv_qp* qp) {
  auto* q = reinterpret_cast<EmuQp*>(qp);
  EmuContext* c = emu(qp->context);
  {
    std::lock_guard<std::mutex> guard(c->lock);
    c->qps.erase(qp->qp_num);
    epoll_ctl(c->epoll_fd, EPOLL_CTL_DEL, q->fd, nullptr);
  }
  closeAll(q->port_fds);
  if (q->label_fd >= 0) close(q->label_fd);
  pthread_mutex_destroy(&q->qp.mutex);
  pthread_cond_destroy(&q->qp.cond);
  delete q;
  return 0;
}

}  // extern "C"
