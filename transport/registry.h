// Every transport megascale knows, in one table: adding a transport is one folder and one row here. Callers
// choose by what a transport can do (same host only or across hosts, built or not), never by name checks
// scattered through the code: the communicator listens on the set MEGASCALE_TRANSPORT gives and picks, per
// peer, the first one that reaches it; the NCCL plugin and sendrecv_perf take the best network transport.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace megascale::transport {

struct TransportInfo {
  const char* name;
  bool same_host_only;  // reaches only processes on this host
  /// Moves bytes through memory this host's processes share: the node engine's shared-memory collectives serve
  /// the ranks it connects.
  bool shares_host_memory;
  /// Null when this build has the transport; otherwise why not (what it needs).
  const char* missing;
  std::unique_ptr<Transport> (*create)(const TransportOptions& options);
  /// Whether MEGASCALE_TRANSPORT=auto takes it on this machine (ibverbs: when an RDMA device is up); null: only
  /// when named (ucx: its context costs a communicator more than tcp's sockets, for a network path tcp or
  /// ibverbs already give).
  bool (*chosen_by_auto)() = nullptr;
  /// How many NICs it drives on this host, each one by TransportOptions (ibverbs: the active ports, by
  /// ib.port_index); null: it goes where the host's routes send it (socket transports: the NCCL plugin's devices
  /// are the interfaces).
  int (*nic_count)(const TransportOptions& options) = nullptr;
};

/// Best first: same-host transports before network ones, faster before slower.
const std::vector<TransportInfo>& transportRegistry();

/// The registry row of `name`; null when there is none.
const TransportInfo* findTransport(const std::string& name);

/// A transport by name. Throws Error: kInvalidArgument for a name the registry lacks (listing the names),
/// kUnavailable for one this build lacks (saying what it needs).
std::unique_ptr<Transport> createTransport(const std::string& name, const TransportOptions& options);

/// The transports a communicator listens on, best first, for MEGASCALE_TRANSPORT=`requested`: "auto" gives
/// every built transport that auto chooses, or only the same-host ones when every rank is on this host (`all_ranks_local`);
/// a name gives that transport alone, which then serves every peer it reaches. Throws as createTransport.
std::vector<std::string> communicatorTransports(const std::string& requested, bool all_ranks_local);

/// The one network transport the NCCL net plugin and sendrecv_perf use for MEGASCALE_TRANSPORT=`requested`:
/// "auto" gives the best built one that auto chooses. Throws Error: kInvalidArgument for a same-host transport or an unknown
/// name, kUnavailable for one this build lacks; the message says what can be chosen.
std::string networkTransport(const std::string& requested);

}  // namespace megascale::transport
