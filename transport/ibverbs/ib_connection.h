// One direction of an ibverbs connection: a set of RC queue pairs to the same peer (several, so a large
// message is striped over distinct UDP flows that ECMP spreads, as MegaScale does), spread over the rank's
// NICs (rails) when it owns several, with a completion queue per NIC. The two ends swap QpSetInfo over the
// setup socket (oob_link.h) and move their queue pairs to RTS.
#pragma once

#include <poll.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/socket.h"
#include "common/status.h"
#include "transport/ibverbs/ib_device.h"
#include "transport/ibverbs/ib_wire.h"

namespace megascale::transport {

constexpr int kMaxQpsPerConnection = 16;  // per NIC (MEGASCALE_IB_QPS_PER_CONNECTION)

struct IbQpSettings {
  int qps = 2;               // MEGASCALE_IB_QPS_PER_CONNECTION
  int traffic_class = 0;     // MEGASCALE_IB_TC (the GRH traffic class: DSCP << 2)
  int service_level = 0;     // MEGASCALE_IB_SL
  bool route_global = false; // MEGASCALE_IB_ROUTE_GLOBAL: the GRH on InfiniBand too (RoCE always has it)
  uint8_t timeout = 20;      // MEGASCALE_IB_TIMEOUT: 4.096 us x 2^timeout per try
  uint8_t retry_cnt = 7;     // MEGASCALE_IB_RETRY_CNT
};

/// Where one of an end's NICs (rails) is reached: its GID, LID and MTU.
struct RailAddress {
  uint8_t gid[16];
  uint32_t lid;  // InfiniBand: the port's LID (0 on RoCE)
  uint32_t mtu;
};

/// What one end tells the other: its queue pair numbers (queue pair i on its rail i mod rails), first PSN,
/// where each rail is reached, and its eager limit. Fixed size on the wire.
struct QpSetInfo {
  uint32_t count;
  uint32_t rails;
  uint32_t qpn[kMaxRails * kMaxQpsPerConnection];
  uint32_t psn;
  RailAddress rail[kMaxRails];
  uint32_t eager_bytes;  // the receiving end's: the largest message it takes eagerly (0: device memory receives)
  std::string encode() const;
  /// Checks the counts, MTUs and LIDs: the blob comes from the network.
  static Status decode(const std::string& blob, QpSetInfo* info);
};

/// ECMP entropy: queue pair `index` of the connection between queue pairs 0 `local_qpn` and `remote_qpn` gets
/// flow label 1..16383, consecutive across the connection's queue pairs. A RoCE v2 NIC turns a label into the
/// UDP source port (0xc000 | label for labels below 2^14), so every queue pair of a connection is a flow of
/// its own for the fabric's ECMP hash, and connections spread by their queue pair numbers. Never 0 (which
/// leaves the port to the NIC).
uint32_t flowLabelOf(uint32_t local_qpn, uint32_t remote_qpn, size_t index);

class IbQpSet {
 public:
  /// Creates `count` queue pairs (RESET -> INIT), queue pair i on rail i mod rails.size(), and a completion
  /// queue per rail; `count` 0: settings.qps per rail. Throws Error naming the device.
  IbQpSet(std::vector<std::shared_ptr<IbDevice>> rails, const IbQpSettings& settings, int send_depth, int recv_depth,
          int count = 0);
  ~IbQpSet();
  IbQpSet(const IbQpSet&) = delete;
  IbQpSet& operator=(const IbQpSet&) = delete;

  QpSetInfo localInfo() const;
  /// INIT -> RTR -> RTS toward the peer's queue pairs (matched one to one, each to the peer's rail of its index).
  /// The peer must have as many.
  Status connect(const QpSetInfo& remote, const std::string& peer);
  /// Moves every queue pair to ERR: the NIC flushes what is posted and drops what still arrives, so once a
  /// comm has reported an error no late packet writes into (or reads from) a buffer its user may free.
  void stopTraffic();

  /// Polls up to `max` completions of one rail (*rail): first those appendReadiness found, then the queues'.
  /// 0 once every rail's queue is empty.
  int poll(int max, ibv_wc* out, int* rail);
  /// What a waiter sleeps on: each rail's completion channel, asked for its next event (readable once a
  /// completion arrives), or a descriptor that is readable already when a completion came while asking.
  void appendReadiness(std::vector<pollfd>& fds);

  int size() const { return static_cast<int>(qps_.size()); }
  ibv_qp* qp(int i) const { return qps_[static_cast<size_t>(i)]; }
  int railCount() const { return static_cast<int>(rails_.size()); }
  int railOf(int qp) const { return qp % railCount(); }
  /// The peer's rail queue pair `qp` reaches (known once connected).
  int remoteRailOf(int qp) const { return qp % remote_rails_; }
  /// Rail 0's device carries the control traffic (CTSs, sizes, eager messages).
  IbDevice& device(int rail = 0) const { return *rails_[static_cast<size_t>(rail)].device; }
  const std::vector<std::shared_ptr<IbDevice>>& devices() const { return devices_; }
  const IbQpSettings& settings() const { return settings_; }

 private:
  struct Rail {
    std::shared_ptr<IbDevice> device;
    ibv_comp_channel* channel = nullptr;
    ibv_cq* cq = nullptr;
    std::vector<ibv_wc> found_while_arming;
  };
  /// Takes the rail's events and asks for the next; false when completions came meanwhile (kept for poll).
  bool arm(Rail& rail);

  std::vector<std::shared_ptr<IbDevice>> devices_;
  std::vector<Rail> rails_;
  IbQpSettings settings_;
  Fd found_fd_;  // eventfd, readable while some rail's found_while_arming holds completions
  std::vector<ibv_qp*> qps_;
  uint32_t psn_;
  int remote_rails_ = 1;
};

}  // namespace megascale::transport
