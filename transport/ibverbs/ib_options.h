// The ibverbs transport's own options, and its knobs (MEGASCALE_IB_*, mirroring NCCL's NCCL_IB_*): which
// device and GID, queue pairs per connection, the GRH's traffic class and service level, and the retransmission
// timeout and retry count (4.096 us x 2^timeout a try). Built with or without libibverbs, so the knobs are
// always known.
#pragma once

#include <string>
#include <vector>

namespace megascale::transport {

struct IbOptions {
  std::string hca;
  int gid_index = -1;
  int roce_version = 2;
  bool ipv6 = false;  // the GID's address family: AF_INET6 rather than AF_INET
  int local_rank = -1;  // the process's rank on its host (MEGASCALE_LOCAL_RANK): its rail
  int local_size = -1;  // the ranks on its host (MEGASCALE_LOCAL_SIZE): they share its ports
  int nics_per_rank = 0;  // ports a rank stripes over; 0: the host's over its ranks
  // Not a knob: the NCCL plugin's device, these of the host's active ports (a virtual device merges several);
  // empty: the nearest.
  std::vector<int> ports;
  int qps_per_connection = 2;
  int traffic_class = 0;  // -1: the communicator's (TransportOptions::traffic_class), else 0
  int service_level = 0;
  bool route_global = false;
  int timeout = 19;
  int retry_cnt = 7;
};

/// The MEGASCALE_IB_* knobs; a timeout of -1 becomes the smallest whose retries ride out MEGASCALE_IB_FLAP_MS.
/// Throws Error(kInvalidArgument) naming a bad value.
IbOptions ibOptionsFromConfig();

}  // namespace megascale::transport
