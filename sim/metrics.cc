#include "sim/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace megascale::sim {

Picoseconds idealFct(Network& net, int src, int dst, uint64_t bytes) {
  const std::vector<const Port*> hops = net.path(src, dst);
  if (hops.empty()) return kNever;
  const NetworkParams& p = net.params();
  std::vector<Picoseconds> free_at(hops.size(), 0);
  Picoseconds arrival = 0;
  for (uint64_t sent = 0; sent < bytes;) {
    const uint64_t payload = std::min<uint64_t>(p.mtu_payload, bytes - sent);
    sent += payload;
    Picoseconds ready = 0;  // the sender holds every packet from the start
    for (size_t i = 0; i < hops.size(); ++i) {
      const Picoseconds start = std::max(ready, free_at[i]);
      free_at[i] = start + serializationTime(payload + p.header_bytes, hops[i]->rateBps());
      ready = free_at[i] + hops[i]->delay();
    }
    arrival = ready;
  }
  Picoseconds ack = arrival;  // the last ACK retraces the path (same rates and delays back)
  for (const Port* hop : hops) ack += serializationTime(p.control_bytes, hop->rateBps()) + hop->delay();
  return ack;
}

double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100 * static_cast<double>(values.size()));
  const size_t index = static_cast<size_t>(std::clamp(rank, 1.0, static_cast<double>(values.size()))) - 1;
  return values[index];
}

namespace {

struct Finished {
  uint64_t bytes;
  double slowdown;
};

std::vector<Finished> finishedFlows(Network& net) {
  std::vector<Finished> flows;
  for (const FlowResult& r : net.results()) {
    if (r.finish == kNever) continue;
    const double ideal = static_cast<double>(idealFct(net, r.src, r.dst, r.bytes));
    flows.push_back({r.bytes, std::max(1.0, static_cast<double>(r.finish - r.start) / ideal)});
  }
  return flows;
}

}  // namespace

std::vector<SlowdownBin> slowdownBySize(Network& net, int bins) {
  std::vector<Finished> flows = finishedFlows(net);
  std::stable_sort(flows.begin(), flows.end(), [](const Finished& a, const Finished& b) { return a.bytes < b.bytes; });
  std::vector<SlowdownBin> out;
  for (int b = 0; b < bins && !flows.empty(); ++b) {
    const size_t lo = flows.size() * static_cast<size_t>(b) / static_cast<size_t>(bins);
    const size_t hi = flows.size() * static_cast<size_t>(b + 1) / static_cast<size_t>(bins);
    if (hi == lo) continue;
    std::vector<double> slowdowns;
    for (size_t i = lo; i < hi; ++i) slowdowns.push_back(flows[i].slowdown);
    out.push_back({flows[hi - 1].bytes, hi - lo, percentile(slowdowns, 50), percentile(slowdowns, 95),
                   percentile(slowdowns, 99)});
  }
  return out;
}

void writeFctCsv(std::ostream& out, Network& net) {
  out << "id,src,dst,bytes,start_us,fct_us,ideal_us,slowdown,goodput_gbps,retransmissions\n";
  char line[320];
  for (const FlowResult& r : net.results()) {
    const double ideal = static_cast<double>(idealFct(net, r.src, r.dst, r.bytes)) / kMicrosecond;
    const auto bytes = static_cast<unsigned long long>(r.bytes), resent = static_cast<unsigned long long>(r.retransmissions);
    const double start = static_cast<double>(r.start) / kMicrosecond;
    if (r.finish == kNever) {
      std::snprintf(line, sizeof(line), "%u,%d,%d,%llu,%.6f,,%.6f,,,%llu\n", r.id, r.src, r.dst, bytes, start, ideal,
                    resent);
    } else {
      const double fct = static_cast<double>(r.finish - r.start) / kMicrosecond;
      std::snprintf(line, sizeof(line), "%u,%d,%d,%llu,%.6f,%.6f,%.6f,%.4f,%.3f,%llu\n", r.id, r.src, r.dst, bytes, start,
                    fct, ideal, std::max(1.0, fct / ideal), fct > 0 ? static_cast<double>(r.bytes) * 8 / (fct * 1e3) : 0.0,
                    resent);
    }
    out << line;
  }
}

}  // namespace megascale::sim
