#include "collectives/schedule.h"

#include <sstream>

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

StepAccess accessOf(const Step& s) {
  switch (s.kind) {
    case Step::kSend: return StepAccess{{s.a, Slice{}}, Slice{}};
    case Step::kRecv: return StepAccess{{Slice{}, Slice{}}, s.dst};
    case Step::kCopy: return StepAccess{{s.a, Slice{}}, s.dst};
    case Step::kReduce: return StepAccess{{s.a, s.b}, s.dst};
    case Step::kHostReduceScatter:
    case Step::kHostAllGather:
    case Step::kHostAllReduce: return StepAccess{{s.a, Slice{}}, s.dst};
  }
  return StepAccess{};
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
      else if (st.kind == Step::kRecv) out << " recv " << slice(st.dst) << "<-" << st.peer << ";";
      else out << (st.kind == Step::kHostReduceScatter ? " host-reduce-scatter "
                   : st.kind == Step::kHostAllGather  ? " host-all-gather "
                                                      : " host-all-reduce ") << slice(st.a)
               << "=>" << slice(st.dst) << ";";
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
