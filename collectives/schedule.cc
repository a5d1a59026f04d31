#include "collectives/schedule.h"

#include <sstream>

#include "collectives/algorithms/algorithms.h"
#include "common/status.h"

namespace megascale {

const char* collectiveName(Collective c) {
  switch (c) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kAllGather: return "all_gather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kReduce: return "reduce";
    case Collective::kAllToAll: return "alltoall";
    case Collective::kBarrier: return "barrier";
    case Collective::kSendRecv: return "sendrecv";
  }
  return "unknown";
}

const char* algorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kRing: return "ring";
    case Algorithm::kRecursiveHalvingDoubling: return "rhd";
    case Algorithm::kDirect: return "direct";
    case Algorithm::kBinomialTree: return "tree";
    case Algorithm::kPairwise: return "pairwise";
    case Algorithm::kDissemination: return "dissemination";
  }
  return "unknown";
}

bool parseAlgorithm(const std::string& name, Algorithm* a) {
  for (Algorithm candidate : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveHalvingDoubling,
                              Algorithm::kDirect, Algorithm::kBinomialTree, Algorithm::kPairwise,
                              Algorithm::kDissemination}) {
    if (name == algorithmName(candidate)) {
      *a = candidate;
      return true;
    }
  }
  return false;
}

Block blockOf(size_t total, int blocks, int index) {
  size_t n = static_cast<size_t>(blocks), i = static_cast<size_t>(index);
  size_t base = total / n, extra = total % n;
  return Block{i * base + std::min(i, extra), base + (i < extra ? 1 : 0)};
}

size_t inputCount(const ScheduleSpec& s) {
  size_t n = static_cast<size_t>(s.nranks);
  switch (s.collective) {
    case Collective::kReduceScatter:
    case Collective::kAllToAll: return s.count * n;
    case Collective::kBarrier: return 0;
    default: return s.count;
  }
}

size_t outputCount(const ScheduleSpec& s) {
  size_t n = static_cast<size_t>(s.nranks);
  switch (s.collective) {
    case Collective::kAllGather:
    case Collective::kAllToAll: return s.count * n;
    case Collective::kBarrier: return 0;
    default: return s.count;
  }
}

Algorithm chooseAlgorithm(const ScheduleSpec& spec, size_t dtype_size) {
  if (spec.algorithm != Algorithm::kAuto) return spec.algorithm;
  size_t bytes = spec.count * dtype_size;
  switch (spec.collective) {
    case Collective::kAllReduce:
      // Small: one round of direct exchange beats log(n) or 2(n-1) latency-bound rounds.
      // Mid: halving-doubling has log(n) rounds and moves the same bytes as ring.
      if (bytes <= 4096 && spec.nranks <= 8) return Algorithm::kDirect;
      if (bytes < (1u << 20)) return Algorithm::kRecursiveHalvingDoubling;
      return Algorithm::kRing;
    case Collective::kAllGather:
    case Collective::kReduceScatter: return Algorithm::kRing;
    case Collective::kBroadcast:
    case Collective::kReduce: return Algorithm::kBinomialTree;
    case Collective::kAllToAll: return Algorithm::kPairwise;
    case Collective::kBarrier: return Algorithm::kDissemination;
    case Collective::kSendRecv: break;
  }
  return Algorithm::kAuto;
}

Schedule buildSchedule(const ScheduleSpec& spec) {
  if (spec.nranks < 1 || spec.rank < 0 || spec.rank >= spec.nranks) {
    throw Error(ErrorCode::kInvalidArgument, "schedule: rank " + std::to_string(spec.rank) + " of " +
                                                 std::to_string(spec.nranks) + " is out of range");
  }
  using algorithms::Builder;
  Builder build = algorithms::builderFor(spec.collective, spec.algorithm);
  if (build == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, std::string("algorithm '") + algorithmName(spec.algorithm) +
                                                 "' does not implement " + collectiveName(spec.collective));
  }
  return build(spec);
}

std::string describeSchedule(const Schedule& s) {
  static const char* buffers[] = {"in", "out", "scratch"};
  auto slice = [&](const Slice& x) {
    std::ostringstream o;
    if (x.buffer < kUser) o << buffers[x.buffer];
    else o << "user" << (x.buffer - kUser);
    o << "[" << x.offset << "+" << x.count << "]";
    return o.str();
  };
  std::ostringstream out;
  for (size_t p = 0; p < s.phases.size(); ++p) {
    out << "phase " << p << ":";
    for (const Step& st : s.phases[p].comm) {
      if (st.kind == Step::kSend) out << " send " << slice(st.a) << "->" << st.peer << ";";
      else out << " recv " << slice(st.dst) << "<-" << st.peer << ";";
    }
    for (const Step& st : s.phases[p].local) {
      if (st.kind == Step::kCopy) out << " copy " << slice(st.a) << "=>" << slice(st.dst) << ";";
      else out << " reduce " << slice(st.a) << "," << slice(st.b) << "=>" << slice(st.dst) << ";";
    }
    out << "\n";
  }
  return out.str();
}

}  // namespace megascale
