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

#include "congestion/dcqcn.h"
#include "congestion/hybrid.h"
#include "congestion/line_rate.h"
#include "congestion/sim/collective_replay.h"
#include "congestion/sim/metrics.h"
#include "congestion/sim/topology.h"
#include "congestion/sim/workload.h"
#include "congestion/swift.h"
#include "congestion/timely.h"

namespace megascale::congestion::sim {
namespace {

struct Options {
  std::string topology = "fattree";
  int k = 4, hosts = 16, servers = 16, rails = 8, group = 4;
  double rate_gbps = 100, fabric_gbps = 0;
  double delay_us = 1;
  std::vector<std::string> controls = {"dcqcn"};
  std::string workload = "permutation";
  uint64_t bytes = 2'000'000;
  double load = 0.3, duration_us = 1000, end_ms = 1000;
  bool pfc = false, spray = false;
  uint64_t seed = 1;
  std::string csv;
};

[[noreturn]] void usage(int status) {
  std::printf(
      "usage: megascale-sim [options]\n"
      "  --topology fattree|rail|star   (default fattree)\n"
      "  --k N                          fat tree arity (default 4: 16 hosts)\n"
      "  --hosts N                      star: hosts on the switch (default 16)\n"
      "  --servers N --rails N --group N  rail-optimized: servers, NICs per server, servers per ToR set\n"
      "  --rate-gbps G                  host links (default 100); --fabric-gbps G switch links (default = host)\n"
      "  --delay-us D                   per-link propagation delay (default 1)\n"
      "  --cc LIST                      comma list of none, dcqcn, dcqcn-paper, swift, hybrid, timely; or all\n"
      "  --workload W                   permutation, incast, alltoall, websearch, fbhadoop, allreduce,\n"
      "                                 or file:PATH (lines \"src dst bytes start_us\")\n"
      "  --bytes B                      flow size, or the all-reduce's bytes per rank (default 2000000)\n"
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
         kLoad, kDuration, kPfc, kSpray, kSeed, kEnd, kCsv, kHelp };
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
  return o;
}

ControlFactory controlNamed(const std::string& name, double line_bps) {
  if (name == "none") return [line_bps] { return std::make_unique<LineRate>(line_bps); };
  if (name == "dcqcn") return [line_bps] { return std::make_unique<Dcqcn>(DcqcnParams::firmware(line_bps)); };
  if (name == "dcqcn-paper") return [line_bps] { return std::make_unique<Dcqcn>(DcqcnParams::paper(line_bps)); };
  if (name == "swift" || name == "hybrid") {
    SwiftParams swift;
    swift.line_rate_bps = line_bps;
    if (name == "swift") return [swift] { return std::make_unique<Swift>(swift); };
    HybridParams hybrid;
    hybrid.swift = swift;
    return [hybrid] { return std::make_unique<Hybrid>(hybrid); };
  }
  if (name == "timely") {
    TimelyParams timely;
    timely.line_rate_bps = line_bps;
    timely.additive_step_bps = line_bps / 1000;
    return [timely] { return std::make_unique<Timely>(timely); };
  }
  throw std::invalid_argument("unknown congestion control '" + name + "' (none, dcqcn, dcqcn-paper, swift, hybrid, timely)");
}

void buildTopology(Network& net, const Options& o) {
  const LinkSpec links{o.rate_gbps * 1e9, o.fabric_gbps * 1e9, static_cast<Picoseconds>(o.delay_us * kMicrosecond)};
  if (o.topology == "fattree") {
    buildFatTree(net, o.k, links);
  } else if (o.topology == "star") {
    buildStar(net, o.hosts, links);
  } else if (o.topology == "rail") {
    RailSpec spec;
    spec.servers = o.servers;
    spec.rails = o.rails;
    spec.servers_per_group = o.group;
    spec.host_bps = links.host_bps;
    spec.fabric_bps = links.fabric_bps;
    spec.delay = links.delay;
    buildRailOptimized(net, spec);
  } else {
    throw std::invalid_argument("unknown topology '" + o.topology + "' (fattree, rail, star)");
  }
  net.configureSwitchPorts([](Port& port) {
    port.marks_ecn = true;
    port.ecn = EcnThresholds::scaledTo(port.rateBps());
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

int run(const Options& o) {
  for (const std::string& name : o.controls) controlNamed(name, o.rate_gbps * 1e9);  // refuse typos before running
  std::printf("# megascale-sim: %s, %s, cc %zu control(s), %s%s\n", o.topology.c_str(), o.workload.c_str(),
              o.controls.size(), o.pfc ? "PFC" : "no PFC", o.spray ? ", spraying" : ", ECMP");
  std::printf("# %-12s %8s %10s %10s %10s %10s %10s %8s %8s %12s %10s\n", "cc", "flows", "done", "p50 slow",
              "p99 slow", "max FCT us", "busbw GB/s", "drops", "resent", "events", "Mevents/s");
  for (const std::string& name : o.controls) {
    NetworkParams params;
    params.pfc = o.pfc;
    if (o.pfc) params.rto.min = 10 * kMillisecond;  // lossless: only a real fault should time out
    params.spraying = o.spray;
    params.seed = o.seed;
    Network net(params);
    buildTopology(net, o);
    const ControlFactory control = controlNamed(name, o.rate_gbps * 1e9);
    const Picoseconds end = static_cast<Picoseconds>(o.end_ms * kMillisecond);
    const auto wall = std::chrono::steady_clock::now();
    double busbw = 0;
    if (o.workload == "allreduce") {
      std::vector<int> hosts(static_cast<size_t>(net.hostCount()));
      for (int h = 0; h < net.hostCount(); ++h) hosts[static_cast<size_t>(h)] = h;
      ScheduleSpec spec;
      spec.collective = Collective::kAllReduce;
      spec.algorithm = Algorithm::kRing;
      spec.count = o.bytes / 4;
      busbw = CollectiveReplay(net, hosts, spec, 4, control).run(end).busbw_gbs;
    } else {
      for (const FlowSpec& f : flowsFor(o, net.hostCount())) net.addFlow(f.src, f.dst, f.bytes, f.start, control);
      net.run(end);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    size_t done = 0;
    uint64_t resent = 0;
    double max_fct = 0;
    std::vector<double> slowdowns;
    for (const FlowResult& r : net.results()) {
      resent += r.retransmissions;
      if (r.finish == kNever) continue;
      ++done;
      const double fct = static_cast<double>(r.finish - r.start);
      max_fct = std::max(max_fct, fct / kMicrosecond);
      slowdowns.push_back(std::max(1.0, fct / static_cast<double>(idealFct(net, r.src, r.dst, r.bytes))));
    }
    const uint64_t events = net.events().processed();
    std::printf("  %-12s %8zu %10zu %10.2f %10.2f %10.1f %10.2f %8llu %8llu %12llu %10.2f\n", name.c_str(),
                net.results().size(), done, percentile(slowdowns, 50), percentile(slowdowns, 99), max_fct, busbw,
                static_cast<unsigned long long>(net.drops()), static_cast<unsigned long long>(resent),
                static_cast<unsigned long long>(events),
                seconds > 0 ? events / seconds / 1e6 : 0.0);
    if (!o.csv.empty()) {
      std::ofstream out(o.csv);
      if (!out) throw std::runtime_error("cannot write " + o.csv);
      writeFctCsv(out, net);
    }
  }
  return 0;
}

}  // namespace
}  // namespace megascale::congestion::sim

int main(int argc, char** argv) {
  using namespace megascale::congestion::sim;
  const Options options = parse(argc, argv);
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "megascale-sim: %s\n", e.what());
    return 2;
  }
}
