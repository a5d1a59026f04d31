// The emulated RoCE device's objects (testbed only, never part of libmegascale). Each verbs object begins with
// the libibverbs struct the caller sees, so a pointer converts both ways; the rest is the emulation's state.
// Devices: one per entry of EMU_ROCE_NETDEVS (default: every interface with an IPv4 address but lo; lo when
// there is none), named "emroce<N>"; an entry "a+b" is a dual-port NIC, port 1 on interface a, port 2 on b.
// A port's state follows its interface's link (ip link set down: port down) and its GID table lists the
// interface's address as a ConnectX does: RoCE v1 first (index 0), RoCE v2 next (index 1). The emulation carries RoCE v2 (UDP/IP) only: a queue pair
// addressed through the v1 entry is refused, the mistake (a job on v1, which routers drop) it exists to catch.
#pragma once

#include <infiniband/verbs.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace megascale::testbed::roce {

struct Netdev {
  std::string name;     // "veth0"
  int ifindex = 0;
  in_addr ipv4{};       // the address RoCEv2 packets leave from and arrive at (UDP)
  uint8_t mac[6] = {};
  int mtu = 1500;
};

constexpr int kMaxPorts = 2;

struct EmuDevice {
  ibv_device device;  // first: ibv_device* <-> EmuDevice*
  std::vector<Netdev> ports;  // port p (1-based) sits on ports[p - 1]
  uint64_t guid;      // network byte order, from port 1's MAC as EUI-64
  // EMU_ROCE_LINK_LAYER=infiniband: the port is InfiniBand - a LID (the low 16 bits of the interface's IPv4
  // address; a LID names a port within the /16 subnet) and one GID of type IB (ibGid) - and queue pairs
  // address peers by LID, or by GID with the GRH.
  bool infiniband = false;
  bool hasPort(uint32_t port) const { return port >= 1 && port <= ports.size(); }
  /// Port `port`'s interface (the caller checked hasPort).
  const Netdev& netdev(uint32_t port) const { return ports[port - 1]; }
  uint16_t lid(uint32_t port) const;
};

constexpr int kGidTableLength = 2;  // RoCE; an InfiniBand port has one
constexpr int kRoceV2GidIndex = 1;
inline int gidTableLength(const EmuDevice& d) { return d.infiniband ? 1 : kGidTableLength; }

/// The devices, found once per process.
const std::vector<EmuDevice*>& emulatedDevices();

/// The interface's link state now: IBV_PORT_ACTIVE when up with carrier, else IBV_PORT_DOWN.
ibv_port_state linkState(const Netdev& netdev);

/// The RoCEv2 GID of an IPv4 address (::ffff:a.b.c.d).
ibv_gid roceGid(in_addr ipv4);

/// An InfiniBand port's GID in the emulation: the link-local subnet prefix fe80::/64 and an interface id
/// ending in the IPv4 address (so a GRH still finds the peer's UDP endpoint).
ibv_gid ibGid(in_addr ipv4);

/// The IPv4 address inside a RoCEv2 GID or an emulated InfiniBand one; false for any other GID.
bool gidToIpv4(const ibv_gid& gid, in_addr* ipv4);

/// The peer a LID names: `local` with its low 16 bits replaced (the subnet is the /16).
in_addr lidToIpv4(uint16_t lid, in_addr local);

struct EmuMr;
struct EmuQp;

/// An open device: its objects, and the thread that plays the NIC (every packet in and out, every timer).
/// `lock` guards the objects; the NIC thread holds it while it works, verbs calls while they change them.
/// What a context's NIC did, for EMU_ROCE_STATS=1 (printed when the device is closed): a slow run says why, and
/// a run over several devices shows each one's share.
struct NicStats {
  std::atomic<uint64_t> packets_out{0}, packets_in{0}, timeouts{0}, rnr_naks_sent{0}, sequence_naks_sent{0};
};

struct EmuContext {
  ibv_context context;  // first
  NicStats stats;
  EmuDevice* device;
  std::mutex lock;
  uint32_t next_key = 0x100;                        // handles; an MR's lkey is its handle, its rkey handle | 2^31
  std::unordered_map<uint32_t, EmuMr*> mrs;         // by handle
  std::unordered_map<uint32_t, EmuQp*> qps;         // by queue pair number
  int epoll_fd = -1;
  int doorbell_fd = -1;                             // eventfd: work was posted, or the thread must stop
  std::atomic<bool> stopping{false};
  std::thread nic;
};

struct EmuPd {
  ibv_pd pd;  // first
};

/// A memory region. Work requests and peers address it by IO virtual address (mr.addr: the iova, as the verbs
/// say); its bytes are at `host`. They differ for a dma-buf region (a GPU's memory, or a memfd in tests), which
/// the emulated NIC maps into this process as a real NIC maps it for DMA.
struct EmuMr {
  ibv_mr mr;  // first
  int access;
  uint8_t* host = nullptr;
  void* mapping = nullptr;  // dma-buf: the mmap to undo at deregistration
  size_t mapping_bytes = 0;
};

/// Where the byte at IO virtual address `addr` of region `m` is (the caller checked it is inside).
inline uint8_t* hostAddress(const EmuMr* m, uint64_t addr) {
  return m->host + (addr - reinterpret_cast<uint64_t>(m->mr.addr));
}

/// The NIC thread: started when a device is opened, stopped when it is closed.
void startNic(EmuContext* c);
void stopNic(EmuContext* c);
/// Called (lock held) when a QP was created, changed state or got work: wakes the NIC thread.
void ringDoorbell(EmuContext* c);
/// Moves the QP to ERR (lock held), before any error completion of it is visible.
void enterError(EmuQp* q);
/// Moves a QP to ERR (lock held): every WQE still queued completes with IBV_WC_WR_FLUSH_ERR.
void flushQp(EmuQp* q);
/// Adds a completion to a CQ and signals its channel if it was armed.
void complete(ibv_cq* cq, const ibv_wc& wc);

struct EmuCq {
  ibv_cq cq;  // first
  std::mutex lock;
  std::vector<ibv_wc> entries;  // completions not yet polled, oldest first
  bool armed = false;           // ibv_req_notify_cq was called: the next completion signals the channel
};

struct Sge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

struct SendWqe {
  uint64_t wr_id;
  ibv_wr_opcode opcode;
  bool signaled;
  uint32_t imm;
  uint64_t remote_addr;
  uint32_t rkey;
  std::vector<Sge> sges;
  uint64_t length;
  bool numbered = false;  // has its PSNs: [first_psn, first_psn + packets)
  uint32_t first_psn = 0;
  uint32_t packets = 0;
};

struct RecvWqe {
  uint64_t wr_id;
  std::vector<Sge> sges;
};

/// A queue pair. Its number carries its UDP port (qp_num = port << 8 | a per-port counter), so a peer reaches
/// it at (the IPv4 address in the GID, qp_num >> 8) with no table to consult; each queue pair has its own
/// port, so several of them between two hosts spread over ECMP paths as distinct UDP flows.
struct EmuQp {
  ibv_qp qp;  // first
  // Its UDP sockets, one per port of the device, all on the port its number carries: the one of the port the
  // queue pair was given (port 1 until INIT says otherwise) is `fd`, where peers send to and where it sends
  // from without a label.
  std::vector<int> port_fds;
  int fd = -1;
  // The flow label's socket: a RoCE v2 NIC puts a queue pair's flow label into the UDP source port
  // (ibv_flow_label_to_udp_sport), which is what a fabric's ECMP hashes; -1 without a label.
  int label_fd = -1;
  uint8_t port = 1;
  sockaddr_in peer{};  // the peer queue pair's UDP endpoint, from RTR on; datagrams from another host are dropped
  ibv_qp_attr attr{};  // what modify_qp set so far
  ibv_qp_cap cap{};
  bool sq_sig_all = false;
  uint32_t mtu = 1024;

  // Requester: go-back-N over PSNs. send_queue holds every WQE not yet completed, oldest first.
  std::deque<SendWqe> send_queue;
  uint32_t next_psn = 0;  // the next PSN a new WQE gets
  uint32_t una_psn = 0;   // the oldest PSN not acknowledged
  uint32_t tx_psn = 0;    // the next PSN to transmit (goes back to una_psn on a timeout or a sequence NAK)
  int retries = 0;        // timeouts in a row without progress
  int rnr_retries = 0;
  std::chrono::steady_clock::time_point deadline{};  // retransmission (or the end of an RNR wait)
  bool rnr_waiting = false;

  // Responder.
  std::deque<RecvWqe> recv_queue;
  uint32_t epsn = 0;         // the PSN expected next
  bool nak_sent = false;     // a sequence NAK for epsn went out; not again until epsn moves
  bool in_message = false;   // a multi-packet SEND or WRITE is under way
  uint64_t message_offset = 0;
  uint8_t* write_at = nullptr;   // WRITE: where the next payload byte goes
  uint8_t* write_end = nullptr;
  bool length_error = false;  // SEND: the message overflowed the receive buffer
};

/// Points the context's data-path operations (post, poll, notify) at the emulation.
void installDataPathOps(ibv_context_ops* ops);

inline EmuContext* emu(ibv_context* c) { return reinterpret_cast<EmuContext*>(c); }

/// Sets errno and returns it (the verbs convention for int results) or null (for pointer results).
int fail(int error);
template <typename T>
T* failNull(int error) {
  fail(error);
  return nullptr;
}

}  // namespace megascale::testbed::roce
