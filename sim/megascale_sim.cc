// megascale-sim: runs a workload on a simulated network under one or more congestion controls and prints, side
// by side, what each achieved: flow completion times and slowdowns, or a collective's time and bus bandwidth,
// plus the simulator's own speed (events per second).
#include <getopt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/algorithms/registry.h"
#include "congestion/dcqcn.h"
#include "congestion/hybrid.h"
#include "congestion/line_rate.h"
#include "sim/collective_replay.h"
#include "sim/shared_nic_allreduce.h"
#include "sim/metrics.h"
#include "sim/queue_monitor.h"
#include "sim/rail_allreduce.h"
#include "sim/topology.h"
#include "sim/workload.h"
#include "transport/udp/udp_congestion.h"
#include "transport/udp/udp_options.h"
#include "congestion/swift.h"
#include "congestion/timely.h"

namespace megascale::sim {
namespace {

struct Options {
  std::string topology = "fattree";
  int k = 4, hosts = 16, servers = 16, rails = 8, group = 4, aggregations = 2, cores = 2;
  double rate_gbps = 100, fabric_gbps = 0;
  double uplink_gbps = 0;        // star: host to switch (0: rate_gbps)
  double wake_lateness_us = 0;   // software hosts' pacing (0: a NIC's)
  double switch_stalls_per_s = 0, switch_stall_us = 0;  // a software switch's stalls (0: a hardware switch's)
  double delay_us = 1;
  std::vector<std::string> controls = {"dcqcn"};
  std::string workload = "permutation";
  uint64_t bytes = 2'000'000;
  double load = 0.3, duration_us = 1000, end_ms = 1000;
  bool pfc = false, spray = false;
  uint64_t seed = 1;
  std::string csv;
  uint32_t unit_packets = 1;  // simulation unit: packets per simulated train
  double nvlink_gbs = 300;     // all-reduce: per-GPU NVLink (host-step) bandwidth each way
  int ranks_per_host = 1;      // fattree/star all-reduce: GPUs sharing each host's NIC
  std::string algorithm = "auto";
  std::string queues;  // prefix of the queue-length CSV and PNG
  double queue_interval_us = 1;
  uint32_t mtu_bytes = 4096;            // payload per packet
  uint64_t buffer_bytes = UINT64_MAX;   // every switch port's drop-tail limit
  uint64_t kmin_bytes = 0, kmax_bytes = 0;  // 0: the thresholds scaled to each port's rate
  double pmax = 0.2;
};

// MegaScale's cluster (NSDI'24, section 3.6): 1,536 servers x 8 x 200G NICs, rail-optimized three-tier Clos of
// 64 x 400G switches, 1:1 at every tier: a ToR's 32 x 400G downlinks split into 64 x 200G for the 64 servers of
// its group, 32 x 400G uplinks, one to each aggregation switch of its rail. The core tier is 24 switches of 256
// ports (every aggregation switch has one 400G link to each): the capacity of 96 64-port cores; rail traffic
// never reaches it. The workload: a 1 GiB all-reduce over all 12,288 GPUs, hierarchical (NVLink inside a server,
// one all-reduce per rail across servers).
void applyPreset(const std::string& name, Options* o) {
  if (name != "megascale-12288") {
    std::fprintf(stderr, "megascale-sim: unknown preset '%s' (megascale-12288)\n", name.c_str());
    std::exit(2);
  }
  o->topology = "rail";
  o->servers = 1536;
  o->rails = 8;
  o->group = 64;
  o->aggregations = 32;
  o->cores = 24;
  o->rate_gbps = 200;
  o->fabric_gbps = 400;
  o->workload = "allreduce";
  o->bytes = 1ull << 30;
  o->controls = {"dcqcn", "swift", "hybrid"};
  o->unit_packets = 16;
}

[[noreturn]] void usage(int status) {
  std::printf(
      "usage: megascale-sim [options]\n"
      "  --topology fattree|rail|star   (default fattree)\n"
      "  --k N                          fat tree arity (default 4: 16 hosts)\n"
      "  --hosts N                      star: hosts on the switch (default 16)\n"
      "  --servers N --rails N --group N  rail-optimized: servers, NICs per server, servers per ToR set\n"
      "  --aggregations N --cores N     rail-optimized: aggregation switches per rail, core switches (default 2, 2)\n"
      "  --rate-gbps G                  host links (default 100); --fabric-gbps G switch links (default = host)\n"
      "  --delay-us D                   per-link propagation delay (default 1)\n"
      "  --uplink-gbps G                star: hosts' links to the switch, when faster than its ports to them\n"
      "                                 (an unshaped veth of the test bed)\n"
      "  --wake-lateness-us T           hosts pace in software, their timers firing T us late on average\n"
      "                                 (uniform 0..2T), catching up as the udp transport does (default 0)\n"
      "  --switch-stalls-per-s R --switch-stall-us L\n"
      "                                 switches are processes that stall R times a second, L us each on\n"
      "                                 average (as the test bed's switch measures its own; default 0: never)\n"
      "  --cc LIST                      comma list of none, dcqcn, dcqcn-paper, swift, hybrid, timely; or all;\n"
      "                                 udp-swift, udp-hybrid, udp-dcqcn, udp-none: the laws as the udp transport\n"
      "                                 sets them up (its default target, window and packet)\n"
      "  --mtu-bytes N                  payload per packet (default 4096)\n"
      "  --buffer-bytes N               every switch port's buffer, drop tail (default unlimited)\n"
      "  --kmin-bytes N --kmax-bytes N --pmax P  every switch port's ECN marking (default: scaled to its rate)\n"
      "  --workload W                   permutation, incast, alltoall, websearch, fbhadoop, allreduce,\n"
      "                                 or file:PATH (lines \"src dst bytes start_us\")\n"
      "  --bytes B                      flow size, or the all-reduce's bytes per GPU (default 2000000)\n"
      "  --algorithm A                  all-reduce across hosts: auto (the library's choice), ring, pring, rhd, dbtree\n"
      "  --nvlink-gbs G                 all-reduce: NVLink (host-step) GB/s per GPU each way (default 300)\n"
      "  --ranks-per-host N             fattree/star all-reduce: N GPUs share each host's NIC; the library's\n"
      "                                 hierarchical schedule, host steps at --nvlink-gbs (default 1: flat)\n"
      "  --unit-packets N               simulate N 4 KiB packets of a flow as one train (default 1): fewer\n"
      "                                 events, less accuracy (docs/congestion.md measures it)\n"
      "  --queues PREFIX                queue lengths of the 8 busiest switch ports over time: PREFIX-<cc>.csv/.png\n"
      "  --queue-interval-us T          their sampling interval (default 1)\n"
      "  --preset megascale-12288       MegaScale's 12,288-GPU cluster and 1 GiB all-reduce (flags after it override)\n"
      "  --load L --duration-us D       websearch/fbhadoop: load of each host link and arrival window\n"
      "  --pfc  --spray  --seed S  --end-ms T  --csv PATH (per-flow FCTs of the last control)\n");
  std::exit(status);
}

std::vector<std::string> splitList(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = list.find(',', start);
    items.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

double number(const char* flag, const char* text, double min) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(v >= min)) {
    std::fprintf(stderr, "megascale-sim: %s needs a number >= %g, not '%s'\n", flag, min, text);
    std::exit(2);
  }
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  enum { kTopology = 1000, kK, kHosts, kServers, kRails, kGroup, kRate, kFabric, kDelay, kCc, kWorkload, kBytes,
         kLoad, kDuration, kPfc, kSpray, kSeed, kEnd, kCsv, kHelp, kAggregations, kCores, kUnit, kNvlink, kAlgorithm,
         kPreset, kQueues, kQueueInterval, kRanksPerHost, kMtu, kBuffer, kKmin, kKmax, kPmax, kUplink, kWakeLateness,
         kStallsPerSecond, kStallLength };
  static const option longs[] = {
      {"topology", required_argument, nullptr, kTopology}, {"k", required_argument, nullptr, kK},
      {"hosts", required_argument, nullptr, kHosts},       {"servers", required_argument, nullptr, kServers},
      {"rails", required_argument, nullptr, kRails},       {"group", required_argument, nullptr, kGroup},
      {"rate-gbps", required_argument, nullptr, kRate},    {"fabric-gbps", required_argument, nullptr, kFabric},
      {"delay-us", required_argument, nullptr, kDelay},    {"cc", required_argument, nullptr, kCc},
      {"workload", required_argument, nullptr, kWorkload}, {"bytes", required_argument, nullptr, kBytes},
      {"load", required_argument, nullptr, kLoad},         {"duration-us", required_argument, nullptr, kDuration},
      {"pfc", no_argument, nullptr, kPfc},                 {"spray", no_argument, nullptr, kSpray},
      {"seed", required_argument, nullptr, kSeed},         {"end-ms", required_argument, nullptr, kEnd},
      {"csv", required_argument, nullptr, kCsv},           {"help", no_argument, nullptr, kHelp},
      {"aggregations", required_argument, nullptr, kAggregations}, {"cores", required_argument, nullptr, kCores},
      {"unit-packets", required_argument, nullptr, kUnit},   {"nvlink-gbs", required_argument, nullptr, kNvlink},
      {"algorithm", required_argument, nullptr, kAlgorithm}, {"preset", required_argument, nullptr, kPreset},
      {"queues", required_argument, nullptr, kQueues},     {"queue-interval-us", required_argument, nullptr, kQueueInterval},
      {"ranks-per-host", required_argument, nullptr, kRanksPerHost},
      {"mtu-bytes", required_argument, nullptr, kMtu},     {"buffer-bytes", required_argument, nullptr, kBuffer},
      {"kmin-bytes", required_argument, nullptr, kKmin},   {"kmax-bytes", required_argument, nullptr, kKmax},
      {"pmax", required_argument, nullptr, kPmax},
      {"uplink-gbps", required_argument, nullptr, kUplink}, {"wake-lateness-us", required_argument, nullptr, kWakeLateness},
      {"switch-stalls-per-s", required_argument, nullptr, kStallsPerSecond},
      {"switch-stall-us", required_argument, nullptr, kStallLength},
      {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "h", longs, nullptr)) != -1) {
    switch (c) {
      case kTopology: o.topology = optarg; break;
      case kK: o.k = static_cast<int>(number("--k", optarg, 2)); break;
      case kHosts: o.hosts = static_cast<int>(number("--hosts", optarg, 2)); break;
      case kServers: o.servers = static_cast<int>(number("--servers", optarg, 1)); break;
      case kRails: o.rails = static_cast<int>(number("--rails", optarg, 1)); break;
      case kGroup: o.group = static_cast<int>(number("--group", optarg, 1)); break;
      case kRate: o.rate_gbps = number("--rate-gbps", optarg, 0.001); break;
      case kFabric: o.fabric_gbps = number("--fabric-gbps", optarg, 0.001); break;
      case kDelay: o.delay_us = number("--delay-us", optarg, 0); break;
      case kCc: o.controls = std::string(optarg) == "all" ? std::vector<std::string>{"none", "dcqcn", "dcqcn-paper",
                                                                                      "swift", "hybrid", "timely"}
                                                          : splitList(optarg);
        break;
      case kWorkload: o.workload = optarg; break;
      case kBytes: o.bytes = static_cast<uint64_t>(number("--bytes", optarg, 1)); break;
      case kLoad: o.load = number("--load", optarg, 0.001); break;
      case kDuration: o.duration_us = number("--duration-us", optarg, 0.001); break;
      case kPfc: o.pfc = true; break;
      case kSpray: o.spray = true; break;
      case kSeed: o.seed = static_cast<uint64_t>(number("--seed", optarg, 0)); break;
      case kEnd: o.end_ms = number("--end-ms", optarg, 0.001); break;
      case kCsv: o.csv = optarg; break;
      case kAggregations: o.aggregations = static_cast<int>(number("--aggregations", optarg, 1)); break;
      case kCores: o.cores = static_cast<int>(number("--cores", optarg, 0)); break;
      case kUnit: o.unit_packets = static_cast<uint32_t>(number("--unit-packets", optarg, 1)); break;
      case kNvlink: o.nvlink_gbs = number("--nvlink-gbs", optarg, 0.001); break;
      case kRanksPerHost: o.ranks_per_host = static_cast<int>(number("--ranks-per-host", optarg, 1)); break;
      case kAlgorithm: o.algorithm = optarg; break;
      case kPreset: applyPreset(optarg, &o); break;
      case kQueues: o.queues = optarg; break;
      case kQueueInterval: o.queue_interval_us = number("--queue-interval-us", optarg, 0.001); break;
      case kMtu: o.mtu_bytes = static_cast<uint32_t>(number("--mtu-bytes", optarg, 256)); break;
      case kBuffer: o.buffer_bytes = static_cast<uint64_t>(number("--buffer-bytes", optarg, 1)); break;
      case kKmin: o.kmin_bytes = static_cast<uint64_t>(number("--kmin-bytes", optarg, 0)); break;
      case kKmax: o.kmax_bytes = static_cast<uint64_t>(number("--kmax-bytes", optarg, 1)); break;
      case kPmax: o.pmax = number("--pmax", optarg, 0); break;
      case kUplink: o.uplink_gbps = number("--uplink-gbps", optarg, 0.001); break;
      case kWakeLateness: o.wake_lateness_us = number("--wake-lateness-us", optarg, 0); break;
      case kStallsPerSecond: o.switch_stalls_per_s = number("--switch-stalls-per-s", optarg, 0); break;
      case kStallLength: o.switch_stall_us = number("--switch-stall-us", optarg, 0); break;
      case kHelp:
      case 'h': usage(0);
      default: usage(2);
    }
  }
  if (optind < argc) {
    std::fprintf(stderr, "megascale-sim: unexpected argument '%s'\n", argv[optind]);
    std::exit(2);
  }
  if (o.fabric_gbps == 0) o.fabric_gbps = o.rate_gbps;
  if (o.uplink_gbps > 0 && o.topology != "star") {
    std::fprintf(stderr, "megascale-sim: --uplink-gbps is for the star topology\n");
    std::exit(2);
  }
  if ((o.switch_stalls_per_s > 0) != (o.switch_stall_us > 0)) {
    std::fprintf(stderr, "megascale-sim: --switch-stalls-per-s and --switch-stall-us go together, both above 0\n");
    std::exit(2);
  }
  if ((o.kmin_bytes > 0 || o.kmax_bytes > 0) && (o.kmax_bytes <= o.kmin_bytes || o.pmax > 1)) {
    std::fprintf(stderr, "megascale-sim: --kmin-bytes and --kmax-bytes go together, kmin < kmax, and --pmax <= 1\n");
    std::exit(2);
  }
  if (o.ranks_per_host > 1 && (o.topology == "rail" || o.workload != "allreduce")) {
    std::fprintf(stderr, "megascale-sim: --ranks-per-host is for the all-reduce on fattree or star (a rail server's GPUs are --rails)\n");
    std::exit(2);
  }
  if (o.ranks_per_host > 1 && o.algorithm != "auto" && o.algorithm != "hier") {
    std::fprintf(stderr, "megascale-sim: --ranks-per-host runs the hierarchical all-reduce, not --algorithm %s\n", o.algorithm.c_str());
    std::exit(2);
  }
  if (o.unit_packets > 256) {
    std::fprintf(stderr, "megascale-sim: --unit-packets %u is above 256 (1 MiB)\n", o.unit_packets);
    std::exit(2);
  }
  return o;
}

ControlFactory controlNamed(const std::string& name, double line_bps, uint32_t packet_bytes) {
  if (name.rfind("udp-", 0) == 0) {
    const transport::UdpControlSetup setup{name.substr(4), line_bps, packet_bytes, transport::UdpOptions{}.window_bytes, 0};
    transport::makeUdpControl(setup);  // an unknown law throws here, not per flow
    return [setup] { return transport::makeUdpControl(setup); };
  }
  if (name == "none") return [line_bps] { return std::make_unique<congestion::LineRate>(line_bps); };
  if (name == "dcqcn") return [line_bps] { return std::make_unique<congestion::Dcqcn>(congestion::DcqcnParams::firmware(line_bps)); };
  if (name == "dcqcn-paper") return [line_bps] { return std::make_unique<congestion::Dcqcn>(congestion::DcqcnParams::paper(line_bps)); };
  if (name == "swift" || name == "hybrid") {
    congestion::SwiftParams swift;
    swift.line_rate_bps = line_bps;
    if (name == "swift") return [swift] { return std::make_unique<congestion::Swift>(swift); };
    congestion::HybridParams hybrid;
    hybrid.swift = swift;
    return [hybrid] { return std::make_unique<congestion::Hybrid>(hybrid); };
  }
  if (name == "timely") {
    congestion::TimelyParams timely;
    timely.line_rate_bps = line_bps;
    timely.additive_step_bps = line_bps / 1000;
    return [timely] { return std::make_unique<congestion::Timely>(timely); };
  }
  throw std::invalid_argument("unknown congestion control '" + name +
                              "' (none, dcqcn, dcqcn-paper, swift, hybrid, timely, udp-swift, udp-hybrid, udp-dcqcn, udp-none)");
}

void buildTopology(Network& net, const Options& o) {
  LinkSpec links{o.rate_gbps * 1e9, o.fabric_gbps * 1e9, static_cast<Picoseconds>(o.delay_us * kMicrosecond)};
  links.uplink_bps = o.uplink_gbps * 1e9;
  if (o.topology == "fattree") {
    buildFatTree(net, o.k, links);
  } else if (o.topology == "star") {
    buildStar(net, o.hosts, links);
  } else if (o.topology == "rail") {
    RailSpec spec;
    spec.servers = o.servers;
    spec.rails = o.rails;
    spec.servers_per_group = o.group;
    spec.aggregations_per_rail = o.aggregations;
    spec.cores = o.cores;
    spec.host_bps = links.host_bps;
    spec.fabric_bps = links.fabric_bps;
    spec.delay = links.delay;
    buildRailOptimized(net, spec);
  } else {
    throw std::invalid_argument("unknown topology '" + o.topology + "' (fattree, rail, star)");
  }
  net.configureSwitchPorts([&o](Port& port) {
    port.marks_ecn = true;
    port.ecn = congestion::EcnThresholds::scaledTo(port.rateBps());
    if (o.kmax_bytes > 0) port.ecn = congestion::EcnThresholds{o.kmin_bytes, o.kmax_bytes, o.pmax};
    port.buffer_bytes = o.buffer_bytes;
  });
}

std::vector<FlowSpec> flowsFor(const Options& o, int hosts) {
  const std::string& w = o.workload;
  if (w == "permutation") return permutation(hosts, o.bytes, o.seed);
  if (w == "alltoall") return allToAll(hosts, o.bytes);
  if (w == "incast") {
    std::vector<int> senders(static_cast<size_t>(hosts - 1));
    for (int h = 1; h < hosts; ++h) senders[static_cast<size_t>(h - 1)] = h;
    return incast(senders, 0, o.bytes);
  }
  const Picoseconds duration = static_cast<Picoseconds>(o.duration_us * kMicrosecond);
  if (w == "websearch") return poissonLoad(hosts, SizeDistribution::webSearch(), o.load, o.rate_gbps * 1e9, duration, o.seed);
  if (w == "fbhadoop") return poissonLoad(hosts, SizeDistribution::fbHadoop(), o.load, o.rate_gbps * 1e9, duration, o.seed);
  if (w.rfind("file:", 0) == 0) {
    std::ifstream in(w.substr(5));
    if (!in) throw std::runtime_error("cannot open flow file " + w.substr(5));
    return readFlowFile(in, hosts);
  }
  throw std::invalid_argument("unknown workload '" + w + "'");
}

NetworkParams paramsFor(const Options& o, const std::string& control) {
  NetworkParams params;
  params.pfc = o.pfc;
  if (o.pfc) params.rto.min = 10 * kMillisecond;  // lossless: only a real fault should time out
  params.spraying = o.spray;
  params.seed = o.seed;
  params.unit_packets = o.unit_packets;
  params.mtu_payload = o.mtu_bytes;
  params.wake_lateness = static_cast<Picoseconds>(o.wake_lateness_us * kMicrosecond);
  params.switch_stalls_per_second = o.switch_stalls_per_s;
  params.switch_stall_mean = static_cast<Picoseconds>(o.switch_stall_us * kMicrosecond);
  if (control.rfind("udp-", 0) == 0) {  // the transport's timer, not a NIC's: a 1 ms floor, not 100 us
    const transport::UdpOptions udp;
    params.give_up_after = udp.give_up_ms * kMillisecond;
    params.rto = transport::udpRtoParams(udp.rto_min_us * kMicrosecond, params.give_up_after);
  }
  return params;
}

struct Tally {
  uint64_t resent = 0, marks = 0, pauses = 0;
  Picoseconds paused = 0;
};

Tally tally(Network& net) {
  Tally t;
  for (const FlowResult& r : net.results()) t.resent += r.retransmissions;
  for (const Port* port : net.allPorts()) {
    t.marks += port->stats.marks;
    t.pauses += port->stats.pauses_sent;
    t.paused += port->stats.paused_time;
  }
  return t;
}

std::unique_ptr<QueueMonitor> watchSwitchQueues(Network& net, const Options& o) {
  if (o.queues.empty()) return nullptr;
  std::vector<const Port*> ports;
  for (const Port* port : net.switchPorts()) ports.push_back(port);
  return std::make_unique<QueueMonitor>(net, ports, static_cast<Picoseconds>(o.queue_interval_us * kMicrosecond));
}

void writeQueues(const QueueMonitor& monitor, const std::string& prefix, const std::string& control) {
  const std::vector<size_t> busiest = monitor.busiest(8);
  const std::string csv = prefix + "-" + control + ".csv", png = prefix + "-" + control + ".png";
  std::ofstream out(csv);
  monitor.writeCsv(out, busiest);
  if (!out) throw std::runtime_error("cannot write " + csv);
  monitor.writePng(png, busiest);
  std::printf("# %s: queue lengths of the %zu busiest switch ports (%zu samples): %s, %s\n", control.c_str(),
              busiest.size(), monitor.samples(), csv.c_str(), png.c_str());
}

// An all-reduce of o.bytes per GPU: on the rail topology hierarchical (rail_allreduce.h); elsewhere every host is
// a rank of one all-reduce.
struct AllReduceOutcome {
  CollectiveResult network;
  double step_us = 0, busbw_gbs = 0;
  int ranks = 0;
  const char* algorithm = "";
};

// Several ranks per host on one NIC: the library's hierarchical schedule, replayed whole (shared_nic_allreduce.h).
AllReduceOutcome runOnSharedNics(Network& net, const Options& o, const ControlFactory& control, Picoseconds end) {
  SharedNicAllReduceSpec spec;
  spec.ranks_per_host = o.ranks_per_host;
  spec.bytes_per_rank = o.bytes;
  spec.host_bytes_per_s = o.nvlink_gbs * 1e9;
  const SharedNicAllReduceResult r = runSharedNicAllReduce(net, spec, control, end);
  AllReduceOutcome out;
  out.network = r.run;
  out.algorithm = algorithmName(r.algorithm);
  out.ranks = net.hostCount() * o.ranks_per_host;
  out.step_us = static_cast<double>(r.run.time) / kMicrosecond;
  out.busbw_gbs = r.run.busbw_gbs;
  // What each NIC carries: its host's whole vector, reduce-scattered and all-gathered across the hosts.
  const double hosts = net.hostCount();
  out.network.busbw_gbs = r.run.time > 0 ? 2 * (hosts - 1) / hosts * static_cast<double>(o.bytes) /
                                               (static_cast<double>(r.run.time) / 1e12) / 1e9
                                         : 0;
  return out;
}

AllReduceOutcome runAllReduce(Network& net, const Options& o, const ControlFactory& control, Picoseconds end) {
  if (o.ranks_per_host > 1) return runOnSharedNics(net, o, control, end);
  RailAllReduceSpec spec;
  spec.rails = o.topology == "rail" ? o.rails : 1;
  spec.bytes_per_gpu = o.bytes;
  spec.nvlink_bytes_per_s = o.nvlink_gbs * 1e9;
  // A message's completion waits for its acknowledgement: across a rail, ToR - aggregation - ToR and back.
  spec.network = LinkCost{8 * o.delay_us * 1e-6, o.rate_gbps * 1e9 / 8};
  if (!parseAlgorithm(o.algorithm, &spec.algorithm)) throw std::invalid_argument("unknown algorithm '" + o.algorithm + "'");
  const RailAllReduceResult r = runRailAllReduce(net, spec, control, end);
  AllReduceOutcome out;
  out.network = r.network;
  out.algorithm = algorithmName(r.algorithm);
  out.ranks = net.hostCount();
  out.step_us = r.step_s * 1e6;
  out.busbw_gbs = r.busbw_gbs;
  return out;
}

int run(const Options& o) {
  for (const std::string& name : o.controls) controlNamed(name, o.rate_gbps * 1e9, o.mtu_bytes);  // refuse typos before running
  const bool allreduce = o.workload == "allreduce";
  std::printf("# megascale-sim: %s, %s, %zu control(s), %s%s, %u packet(s) per simulated unit\n",
              o.topology.c_str(), o.workload.c_str(), o.controls.size(), o.pfc ? "PFC" : "no PFC",
              o.spray ? ", spraying" : ", ECMP", o.unit_packets);
  if (allreduce) {
    std::printf("# %-12s %6s %5s %11s %11s %10s %9s %7s %7s %9s %7s %9s %12s %9s %7s\n", "cc", "GPUs", "algo",
                "network us", "step us", "busbw GB/s", "NIC busbw", "drops", "resent", "marks", "pauses", "paused us",
                "events", "Mevents/s", "wall s");
  } else {
    std::printf("# %-12s %8s %8s %9s %9s %10s %11s %7s %7s %9s %7s %9s %12s %9s\n", "cc", "flows", "done", "p50 slow",
                "p99 slow", "max FCT us", "peak queue", "drops", "resent", "marks", "pauses", "paused us", "events",
                "Mevents/s");
  }
  for (const std::string& name : o.controls) {
    const auto wall = std::chrono::steady_clock::now();
    Network net(paramsFor(o, name));
    buildTopology(net, o);
    const ControlFactory control = controlNamed(name, o.rate_gbps * 1e9, o.mtu_bytes + NetworkParams{}.header_bytes);
    const Picoseconds end = static_cast<Picoseconds>(o.end_ms * kMillisecond);
    const std::unique_ptr<QueueMonitor> monitor = watchSwitchQueues(net, o);
    const auto sim_start = std::chrono::steady_clock::now();
    AllReduceOutcome ar;
    if (allreduce) {
      ar = runAllReduce(net, o, control, end);
    } else {
      for (const FlowSpec& f : flowsFor(o, net.hostCount())) net.addFlow(f.src, f.dst, f.bytes, f.start, control);
      net.run(end);
    }
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - sim_start).count();
    const double wall_s = std::chrono::duration<double>(now - wall).count();
    const uint64_t events = net.events().processed();
    const double rate = seconds > 0 ? static_cast<double>(events) / seconds / 1e6 : 0.0;
    const Tally t = tally(net);
    if (allreduce) {
      std::printf("  %-12s %6d %5s %11.1f %11.1f %10.2f %9.2f %7llu %7llu %9llu %7llu %9.1f %12llu %9.2f %7.1f%s\n",
                  name.c_str(), ar.ranks, ar.algorithm, static_cast<double>(ar.network.time) / kMicrosecond,
                  ar.step_us, ar.busbw_gbs, ar.network.busbw_gbs, static_cast<unsigned long long>(net.drops()),
                  static_cast<unsigned long long>(t.resent), static_cast<unsigned long long>(t.marks),
                  static_cast<unsigned long long>(t.pauses), static_cast<double>(t.paused) / kMicrosecond,
                  static_cast<unsigned long long>(events), rate, wall_s, ar.network.finished ? "" : "  (unfinished)");
      if (monitor) writeQueues(*monitor, o.queues, name);
      std::fflush(stdout);
      continue;
    }
    size_t done = 0;
    double max_fct = 0;
    std::vector<double> slowdowns;
    for (const FlowResult& r : net.results()) {
      if (r.finish == kNever) continue;
      ++done;
      const double fct = static_cast<double>(r.finish - r.start);
      max_fct = std::max(max_fct, fct / kMicrosecond);
      slowdowns.push_back(std::max(1.0, fct / static_cast<double>(idealFct(net, r.src, r.dst, r.bytes))));
    }
    uint64_t peak_queue = 0;  // bytes, the fullest switch port's data queue
    for (const Port* port : net.switchPorts()) peak_queue = std::max(peak_queue, port->stats.max_queue_bytes);
    std::printf("  %-12s %8zu %8zu %9.2f %9.2f %10.1f %11llu %7llu %7llu %9llu %7llu %9.1f %12llu %9.2f\n", name.c_str(),
                net.results().size(), done, percentile(slowdowns, 50), percentile(slowdowns, 99), max_fct,
                static_cast<unsigned long long>(peak_queue),
                static_cast<unsigned long long>(net.drops()), static_cast<unsigned long long>(t.resent),
                static_cast<unsigned long long>(t.marks), static_cast<unsigned long long>(t.pauses),
                static_cast<double>(t.paused) / kMicrosecond, static_cast<unsigned long long>(events), rate);
    if (monitor) writeQueues(*monitor, o.queues, name);
    std::fflush(stdout);
    if (!o.csv.empty()) {
      std::ofstream out(o.csv);
      if (!out) throw std::runtime_error("cannot write " + o.csv);
      writeFctCsv(out, net);
    }
  }
  return 0;
}

}  // namespace
}  // namespace megascale::sim

int main(int argc, char** argv) {
  using namespace megascale::sim;
  const Options options = parse(argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megascale-sim: %s\n", e.what());
    return 2;
  }
}
