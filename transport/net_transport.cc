#include "transport/net_transport.h"

#include "common/config.h"
#include "transport/ibverbs/verbs_timeouts.h"

namespace megascale::transport {

namespace {

int64_t intIn(const char* knob, int64_t low, int64_t high) {
  const int64_t v = config::getInt(knob);
  if (v < low || v > high) {
    throw Error(ErrorCode::kInvalidArgument, std::string(knob) + "=" + std::to_string(v) + ": must be " +
                                                 std::to_string(low) + ".." + std::to_string(high));
  }
  return v;
}

void readIbOptions(TransportOptions* o) {
  o->ib_hca = config::getString("MEGASCALE_IB_HCA");
  o->ib_gid_index = static_cast<int>(intIn("MEGASCALE_IB_GID_INDEX", -1, 255));
  o->ib_qps_per_connection = static_cast<int>(intIn("MEGASCALE_IB_QPS_PER_CONNECTION", 1, 16));
  o->ib_traffic_class = static_cast<int>(intIn("MEGASCALE_IB_TC", -1, 255));
  o->ib_service_level = static_cast<int>(intIn("MEGASCALE_IB_SL", 0, 15));
  o->ib_retry_cnt = static_cast<int>(intIn("MEGASCALE_IB_RETRY_CNT", 0, 7));
  const int64_t flap_ms = intIn("MEGASCALE_IB_FLAP_MS", 1, int64_t{1} << 40);
  o->ib_timeout = static_cast<int>(intIn("MEGASCALE_IB_TIMEOUT", -1, 31));
  if (o->ib_timeout < 0) {
    o->ib_timeout = verbsRetryFor(flap_ms * kMillisecond, static_cast<uint8_t>(o->ib_retry_cnt)).timeout;
  }
}

}  // namespace

TransportOptions transportOptionsFromConfig() {
  TransportOptions o;
  int64_t sockets = config::getInt("MEGASCALE_TCP_SOCKETS");
  if (sockets < 1 || sockets > 64) throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_TCP_SOCKETS must be 1..64");
  o.sockets_per_comm = static_cast<int>(sockets);
  int64_t stripe = config::getInt("MEGASCALE_TCP_STRIPE_MIN");
  if (stripe < 0) throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_TCP_STRIPE_MIN must be >= 0");
  o.stripe_min_bytes = static_cast<size_t>(stripe);
  int64_t ring = config::getInt("MEGASCALE_SHM_RING_BYTES");
  if (ring < 4096) throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_SHM_RING_BYTES must be >= 4096");
  o.shm_ring_bytes = static_cast<size_t>(ring);
  o.bind_address = config::getString("MEGASCALE_TCP_IFADDR");
  o.handshake_timeout_ms = static_cast<int>(config::timeout().count());
  o.dead_peer_timeout_ms = o.handshake_timeout_ms;  // a cut link or dead host fails transfers, never hangs them
  readIbOptions(&o);
  return o;
}

}  // namespace megascale::transport
