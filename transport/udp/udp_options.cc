#include "transport/udp/udp_options.h"

#include "common/status.h"
#include "transport/knob_values.h"

namespace megascale::transport {

namespace {

const config::KnobRegistration kUdpKnobs{
    {"MEGASCALE_UDP_FLOWS", config::Type::kInt, "4", "flows", "transport",
     "udp: flows (UDP source ports) per rail, 1..64; packets are sprayed over every flow that delivers"},
    {"MEGASCALE_UDP_RAILS", config::Type::kString, "", "", "transport",
     "udp: the interfaces whose addresses are rails, as NCCL_SOCKET_IFNAME selects them (\"rail\": rail0, rail1, ...); "
     "every rail gets MEGASCALE_UDP_FLOWS flows; empty: the bind address alone"},
    {"MEGASCALE_UDP_CC", config::Type::kString, "swift", "", "transport",
     "udp: congestion control, swift (delay), dcqcn (ECN, rate), hybrid (delay and ECN, MegaScale's) or none"},
    {"MEGASCALE_UDP_PAYLOAD", config::Type::kInt, "0", "bytes", "transport",
     "udp: message bytes per packet, 256..65000; 0: what the interface's MTU carries unfragmented"},
    {"MEGASCALE_UDP_WINDOW", config::Type::kInt, "33554432", "bytes", "transport",
     "udp: bytes a connection keeps in flight plus those its receiver holds for receives not yet posted"},
    {"MEGASCALE_UDP_LINE_MBPS", config::Type::kInt, "0", "Mb/s", "transport",
     "udp: one rail's rate; a connection starts at and never exceeds the rails' sum; 0: the interface's speed (10000 where it has none)"},
    {"MEGASCALE_UDP_RTO_MIN_US", config::Type::kInt, "1000", "us", "transport",
     "udp: the retransmission timeout's floor (the RTO follows the measured RTT above it)"},
    {"MEGASCALE_UDP_TARGET_US", config::Type::kInt, "0", "us", "transport",
     "udp: the round-trip delay swift and hybrid aim for; 0: the lowest RTT seen plus four packets' serialization at the line rate (at least 100 us)"},
    {"MEGASCALE_UDP_GIVE_UP_MS", config::Type::kInt, "30000", "ms", "transport",
     "udp: a connection that has delivered nothing for this long fails, naming its peer (link flaps shorter are ridden out)"},
    {"MEGASCALE_UDP_PATH_DOWN_MS", config::Type::kInt, "20", "ms", "transport",
     "udp: a flow that has delivered nothing this long while its connection's others do leaves the spray, and is probed back in"},
    {"MEGASCALE_UDP_SEND_BATCH", config::Type::kInt, "32", "datagrams", "transport",
     "udp: datagrams a socket sends in one sendmmsg call, 1..64 (1: one sendmsg each); DPDK: frames per burst"},
    {"MEGASCALE_UDP_GSO", config::Type::kBool, "0", "", "transport",
     "udp: kernel io: a socket's consecutive same-sized datagrams to one peer leave as one message the kernel (or NIC) "
     "segments (UDP_SEGMENT), and the kernel may hand received ones over coalesced (UDP_GRO); a way out that cannot "
     "segment falls back by itself. Up to 1.8x more where the io path is the bottleneck; none under swift's delay "
     "target, whose incast fairness varied more with it on the test bed (docs/performance.md)"},
    {"MEGASCALE_UDP_IO", config::Type::kString, "kernel", "", "transport",
     "udp: how datagrams enter and leave: kernel (sockets: sendmmsg, recvmmsg) or dpdk (DPDK's af_packet device on each rail's interface, tc shaping still applies)"},
    {"MEGASCALE_UDP_DPDK_EAL", config::Type::kString, "", "", "transport",
     "udp: DPDK EAL arguments added to the transport's own (--no-shconf --no-huge --no-pci, one lcore), e.g. '-m 512'"},
    {"MEGASCALE_UDP_DPDK_SPIN_US", config::Type::kInt, "0", "us", "transport",
     "udp: DPDK: how long the engine polls without sleeping after the last frame (then it sleeps until a frame's doorbell, a timer or a post); polling saves a wake-up's microseconds for a core of its own"}};

}  // namespace

UdpOptions udpOptionsFromConfig() {
  UdpOptions o;
  o.flows = static_cast<int>(knobInRange("MEGASCALE_UDP_FLOWS", 1, 64));
  o.rails = config::getString("MEGASCALE_UDP_RAILS");
  o.congestion = config::getString("MEGASCALE_UDP_CC");
  if (o.congestion != "swift" && o.congestion != "dcqcn" && o.congestion != "hybrid" && o.congestion != "none") {
    throw Error(ErrorCode::kInvalidArgument,
                "MEGASCALE_UDP_CC='" + o.congestion + "': expected swift, dcqcn, hybrid or none");
  }
  const int64_t payload = knobInRange("MEGASCALE_UDP_PAYLOAD", 0, 65000);
  if (payload != 0 && payload < 256) {
    throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_UDP_PAYLOAD=" + std::to_string(payload) + ": 0 or 256..65000");
  }
  o.payload_bytes = static_cast<size_t>(payload);
  o.window_bytes = static_cast<size_t>(knobInRange("MEGASCALE_UDP_WINDOW", 1 << 16, int64_t{1} << 34));
  o.line_mbps = knobInRange("MEGASCALE_UDP_LINE_MBPS", 0, 10'000'000);
  o.rto_min_us = knobInRange("MEGASCALE_UDP_RTO_MIN_US", 10, 10'000'000);
  o.target_delay_us = knobInRange("MEGASCALE_UDP_TARGET_US", 0, 10'000'000);
  o.give_up_ms = knobInRange("MEGASCALE_UDP_GIVE_UP_MS", 1, int64_t{1} << 40);
  o.path_down_ms = knobInRange("MEGASCALE_UDP_PATH_DOWN_MS", 1, 3'600'000);
  o.send_batch = static_cast<int>(knobInRange("MEGASCALE_UDP_SEND_BATCH", 1, 64));
  o.gso = config::getBool("MEGASCALE_UDP_GSO");
  o.io = config::getString("MEGASCALE_UDP_IO");
  if (o.io != "kernel" && o.io != "dpdk") {
    throw Error(ErrorCode::kInvalidArgument, "MEGASCALE_UDP_IO='" + o.io + "': expected kernel or dpdk");
  }
  o.dpdk_eal_args = config::getString("MEGASCALE_UDP_DPDK_EAL");
  o.dpdk_spin_us = knobInRange("MEGASCALE_UDP_DPDK_SPIN_US", 0, 10'000'000);
  return o;
}

}  // namespace megascale::transport
