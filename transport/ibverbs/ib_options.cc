#include "transport/ibverbs/ib_options.h"

#include "transport/ibverbs/hca_list.h"
#include "transport/ibverbs/verbs_timeouts.h"
#include "common/status.h"
#include "transport/knob_values.h"

namespace megascale::transport {

namespace {

const config::KnobRegistration kIbKnobs{
      {"MEGASCALE_IB_HCA", config::Type::kString, "", "", "transport",
       "ibverbs: the RDMA devices and ports, NCCL_IB_HCA syntax ([^][=]device[:port],...: name prefixes, = exact names, ^ to leave out); the first active port taken; default: any"},
      {"MEGASCALE_IB_GID_INDEX", config::Type::kInt, "-1", "", "transport",
       "ibverbs: the GID index (NCCL_IB_GID_INDEX); -1: the first of MEGASCALE_IB_ROCE_VERSION and MEGASCALE_IB_ADDR_FAMILY (RoCE); index 0 (InfiniBand)"},
      {"MEGASCALE_IB_ROCE_VERSION", config::Type::kInt, "2", "", "transport",
       "ibverbs: the RoCE version of the GID, 1 or 2 (NCCL_IB_ROCE_VERSION_NUM); routers carry only v2"},
      {"MEGASCALE_IB_ADDR_FAMILY", config::Type::kString, "AF_INET", "", "transport",
       "ibverbs: the address family of the GID, AF_INET or AF_INET6 (NCCL_IB_ADDR_FAMILY)"},
      {"MEGASCALE_IB_NICS_PER_RANK", config::Type::kInt, "0", "NICs", "transport",
       "ibverbs: active ports (NICs) each rank takes and stripes large messages over, 1..4, the nearest first; 0: the host's ports divided among its ranks (MEGASCALE_LOCAL_SIZE), else 1"},
      {"MEGASCALE_IB_QPS_PER_CONNECTION", config::Type::kInt, "2", "queue pairs", "transport",
       "ibverbs: queue pairs per connection and NIC, 1..16 (NCCL_IB_QPS_PER_CONNECTION); each message is striped over all of them, each a UDP flow of its own for ECMP"},
      {"MEGASCALE_IB_TC", config::Type::kInt, "-1", "", "transport",
       "ibverbs: the GRH traffic class, DSCP << 2 (NCCL_IB_TC); -1: the communicator's traffic class, else 0"},
      {"MEGASCALE_IB_SL", config::Type::kInt, "0", "", "transport", "ibverbs: the service level (NCCL_IB_SL)"},
      {"MEGASCALE_IB_ROUTE_GLOBAL", config::Type::kBool, "0", "", "transport",
       "ibverbs: InfiniBand queue pairs carry the GRH (the GID) too; without it they address by LID, and use the GID only toward another subnet"},
      {"MEGASCALE_IB_FLAP_MS", config::Type::kInt, "10000", "ms", "transport",
       "ibverbs: the link outage queue pairs ride out (MegaScale: flaps last seconds); sets the default MEGASCALE_IB_TIMEOUT"},
      {"MEGASCALE_IB_TIMEOUT", config::Type::kInt, "-1", "", "transport",
       "ibverbs: the QP's local ACK timeout, 4.096 us x 2^value per try, 1..31 (NCCL_IB_TIMEOUT); -1: the smallest whose MEGASCALE_IB_RETRY_CNT+1 tries cover MEGASCALE_IB_FLAP_MS"},
      {"MEGASCALE_IB_RETRY_CNT", config::Type::kInt, "7", "", "transport", "ibverbs: retries after a timeout, 0..7 (NCCL_IB_RETRY_CNT)"}};

}  // namespace

IbOptions ibOptionsFromConfig() {
  IbOptions o;
  o.hca = config::getString("MEGASCALE_IB_HCA");
  (void)HcaList::parse(o.hca);  // a malformed list is an error at start, not a device that is never found
  o.gid_index = static_cast<int>(knobInRange("MEGASCALE_IB_GID_INDEX", -1, 255));
  o.roce_version = static_cast<int>(knobInRange("MEGASCALE_IB_ROCE_VERSION", 1, 2));
  const std::string family = config::getString("MEGASCALE_IB_ADDR_FAMILY");
  if (family != "AF_INET" && family != "AF_INET6") {
    throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_IB_ADDR_FAMILY='" + family + "': AF_INET or AF_INET6");
  }
  o.ipv6 = family == "AF_INET6";
  o.local_rank = static_cast<int>(config::getInt("MEGASCALE_LOCAL_RANK"));
  o.local_size = static_cast<int>(config::getInt("MEGASCALE_LOCAL_SIZE"));
  o.nics_per_rank = static_cast<int>(knobInRange("MEGASCALE_IB_NICS_PER_RANK", 0, 4));
  o.qps_per_connection = static_cast<int>(knobInRange("MEGASCALE_IB_QPS_PER_CONNECTION", 1, 16));
  o.traffic_class = static_cast<int>(knobInRange("MEGASCALE_IB_TC", -1, 255));
  o.service_level = static_cast<int>(knobInRange("MEGASCALE_IB_SL", 0, 15));
  o.route_global = config::getBool("MEGASCALE_IB_ROUTE_GLOBAL");
  o.retry_cnt = static_cast<int>(knobInRange("MEGASCALE_IB_RETRY_CNT", 0, 7));
  const int64_t flap_ms = knobInRange("MEGASCALE_IB_FLAP_MS", 1, int64_t{1} << 40);
  o.timeout = static_cast<int>(knobInRange("MEGASCALE_IB_TIMEOUT", -1, 31));
  if (o.timeout < 0) o.timeout = verbsRetryFor(flap_ms * kMillisecond, static_cast<uint8_t>(o.retry_cnt)).timeout;
  return o;
}

}  // namespace megascale::transport
