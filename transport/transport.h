// The transport interface. It mirrors NCCL's net plugin semantics so nccl_plugin/ stays a thin adapter:
// a listener gives an opaque address blob; connect/accept are non-blocking and give one-way comms;
// isend/irecv are tagged and non-blocking; test() drives progress and reports completion and size.
// tcp, shm, ibverbs, UCX and udp implement the same classes; callers choose by Properties.
#pragma once

#include <poll.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "transport/ibverbs/ib_options.h"
#include "transport/shm/shm_options.h"
#include "transport/tcp/tcp_options.h"
#include "transport/udp/udp_options.h"

namespace megascale::transport {

constexpr size_t kMaxAddressBytes = 128;
constexpr int kMaxRequests = 32;  // in flight per comm, as NCCL_NET_MAX_REQUESTS
constexpr int kMaxRecvs = 8;      // buffers per grouped irecv

/// Opaque connection address; small enough to travel through the store or an NCCL handle.
struct Address {
  uint8_t bytes[kMaxAddressBytes];
  size_t size = 0;
  std::string asString() const { return std::string(reinterpret_cast<const char*>(bytes), size); }
  static Address fromString(const std::string& s);  // throws Error(kInvalidArgument) if too long
};

enum PointerKind : unsigned { kHostPointer = 1, kDevicePointer = 2 };

/// The NIC a device transport drives (empty name for socket transports, which use the interfaces topology/
/// finds): what the NCCL plugin reports as its device.
struct NicInfo {
  std::string name;      // e.g. mlx5_0
  std::string pci_path;  // the device's sysfs PCI path; empty when it has none (the emulated device)
  std::string ipv4;      // the address its traffic uses (RoCEv2: the IPv4 in its GID); empty if none
  uint64_t guid = 0;     // the NIC's (node GUID): a dual-port NIC's two ports share it, as NCCL expects
  int port = 0;          // the port number on the NIC; 0 when it has none
};

/// What a transport can do; callers ask for capabilities, never for identities.
struct Properties {
  std::string name;
  double speed_gbps = 0;
  double latency_us = 0;
  int max_requests = kMaxRequests;
  int max_recvs = 1;
  unsigned pointer_kinds = kHostPointer;
  bool dma_buf = false;  // registerDmaBuf works (memory given by a dma-buf descriptor)
  bool same_host_only = false;
  bool one_sided_write = false;
  size_t max_message_bytes = SIZE_MAX;
  NicInfo nic;
  std::string lanes;  // how a connection spreads its bytes, for reports ("2 socket(s) per comm"); empty: one path
};

/// Registered memory. Host transports need no pinning; the handle still travels so RDMA fits later.
struct MemoryRegion {
  void* base = nullptr;
  size_t size = 0;
  PointerKind kind = kHostPointer;
  void* handle = nullptr;  // the transport's own registration (ibverbs: the ibv_mr), if it makes one
};

/// Opaque to callers; owned by its comm and valid until test() reports it done.
class Request {
 protected:
  ~Request() = default;
};

class SendComm {
 public:
  virtual ~SendComm() = default;
  /// Non-blocking. On success *request may be null: no free request slot now, retry after test().
  virtual Status isend(const void* data, size_t size, uint32_t tag, const MemoryRegion* mr, Request** request) = 0;
  /// Drives progress. *done once the data has left the user buffer; *size is the bytes sent.
  virtual Status test(Request* request, bool* done, size_t* size) = 0;
  /// Appends the descriptors whose readiness lets test() move the pending sends, so that a waiter can sleep
  /// in poll() instead of waking on a timer. False: this transport offers none (the caller naps).
  virtual bool appendReadiness(std::vector<pollfd>& fds) const {
    (void)fds;
    return false;
  }
};

class RecvComm {
 public:
  virtual ~RecvComm() = default;
  /// Posts n receive buffers as one request; each incoming message lands in the first buffer whose tag
  /// matches. A message larger than its buffer is an error; a smaller one reports its exact size.
  virtual Status irecv(int n, void* const* data, const size_t* sizes, const uint32_t* tags,
                       const MemoryRegion* const* mrs, Request** request) = 0;
  /// Drives progress. *done once all n messages have arrived; sizes[i] gets each one's length.
  virtual Status test(Request* request, bool* done, size_t* sizes) = 0;
  /// As SendComm::appendReadiness, for the posted receives.
  virtual bool appendReadiness(std::vector<pollfd>& fds) const {
    (void)fds;
    return false;
  }
  /// After a receive into device memory completed: makes its data visible to the GPU (the NIC's writes may
  /// still be in flight through PCIe), as NCCL's flush. *request is null when nothing needs flushing (host
  /// memory, every transport without device memory); else test() reports it done.
  virtual Status iflush(int n, void* const* data, const size_t* sizes, const MemoryRegion* const* mrs,
                        Request** request) {
    (void)n, (void)data, (void)sizes, (void)mrs;
    *request = nullptr;
    return Status::ok();
  }
  /// The id the connecting side passed to connect() (the peer's rank inside megascale).
  virtual uint64_t remoteId() const = 0;
};

class Listener {
 public:
  virtual ~Listener() = default;
  virtual const Address& address() const = 0;
  /// Non-blocking: *comm is set once a peer has connected and authenticated, else left null.
  virtual Status accept(std::unique_ptr<RecvComm>* comm) = 0;
  /// Every comm ready now, in one pass (a transport that can saves the call that finds nothing after the last).
  virtual Status acceptReady(std::vector<std::unique_ptr<RecvComm>>* comms) {
    while (true) {
      std::unique_ptr<RecvComm> comm;
      MSC_RETURN_IF_ERROR(accept(&comm));
      if (!comm) return Status::ok();
      comms->push_back(std::move(comm));
    }
  }
  /// Appends the descriptors whose readiness lets accept() move (the listening socket, handshakes under way),
  /// so an idle rank can sleep in poll() until a peer connects. False: none (the caller naps).
  virtual bool appendReadiness(std::vector<pollfd>& fds) const {
    (void)fds;
    return false;
  }
};

class Connector {
 public:
  virtual ~Connector() = default;
  /// Non-blocking: call until *comm is set. Errors name the address.
  virtual Status poll(std::unique_ptr<SendComm>* comm) = 0;
  /// Appends the descriptors whose readiness lets poll() move, so a connecting rank can sleep in poll().
  /// False: none now (the caller naps).
  virtual bool appendReadiness(std::vector<pollfd>& fds) const {
    (void)fds;
    return false;
  }
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const Properties& properties() const = 0;
  /// Throws Error if the transport cannot listen.
  virtual std::unique_ptr<Listener> listen() = 0;
  /// Starts connecting to a listener's address; local_id is what the other side's remoteId() returns.
  virtual std::unique_ptr<Connector> connect(const Address& address, uint64_t local_id) = 0;
  virtual Status registerMemory(void* data, size_t size, PointerKind kind, MemoryRegion* mr);
  /// Registers device memory given as a dma-buf descriptor (`offset`: where data starts in it), as NCCL's
  /// regMrDmaBuf. kUnavailable unless properties().dma_buf.
  virtual Status registerDmaBuf(void* data, size_t size, int fd, uint64_t offset, MemoryRegion* mr);
  /// Undoes registerMemory or registerDmaBuf (the region must have no transfer in flight).
  virtual void deregisterMemory(MemoryRegion* mr) { mr->handle = nullptr; }
  /// Registrations this transport has made with its devices since it started (ibv_reg_mr and the like), kept
  /// ones and those a transfer from unregistered memory made for itself. 0 where nothing needs registering.
  virtual uint64_t registrationsMade() const { return 0; }
  /// Whether connect(address) can work: the address is one of this transport's ("name:...") and the peer is
  /// within reach (a same-host transport checks that the peer shares this host).
  bool canConnect(const Address& address) const;

 protected:
  /// For an address of this transport: whether its listener is within reach. Network transports reach all.
  virtual bool reaches(const Address& address) const {
    (void)address;
    return true;
  }
};

/// What every transport takes, and each transport's own options, declared in its folder with its knobs.
struct TransportOptions {
  std::string secret;            // job secret every connection proves (common/auth.h)
  std::string bind_address;      // IPv4 address to listen on (tcp; the out-of-band link of ucx and ibverbs)
  int handshake_timeout_ms = 30000;
  int traffic_class = -1;        // IP_TOS (DSCP << 2) on every socket; ibverbs' GRH by default; -1: the system's
  // Receives may land in device memory (the NCCL plugin with GPU memory support): ibverbs then sends nothing
  // eagerly into host bounce buffers, since no CPU copy may touch the receiver's buffer.
  bool device_memory_receives = false;
  TcpOptions tcp;
  ShmOptions shm;
  IbOptions ib;
  UdpOptions udp;
};

/// Whether a transport with these properties can be handed device memory by the NCCL plugin's caller: the
/// plugin then sets TransportOptions::device_memory_receives (and sendrecv_perf's bare transport does too, so
/// that the two run the same protocol).
inline bool mayReceiveIntoDeviceMemory(const Properties& p) { return (p.pointer_kinds & kDevicePointer) || p.dma_buf; }

}  // namespace megascale::transport
