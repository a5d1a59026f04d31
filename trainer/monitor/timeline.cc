#include "trainer/monitor/timeline.h"

#include <cstdio>

namespace megascale::trainer {

const char* streamName(Stream stream) {
  switch (stream) {
    case Stream::kCompute: return "compute";
    case Stream::kTensorParallel: return "tensor-parallel comm";
    case Stream::kPipeline: return "pipeline comm";
    case Stream::kDataParallel: return "data-parallel comm";
    case Stream::kWaits: return "waits (exposed comm, bubbles)";
    case Stream::kCount: break;
  }
  return "?";
}

double StepTimes::exposed() const {
  double total = 0;
  for (double w : wait_s) total += w;
  return total;
}

double StepTimes::compute() const {
  return forward_s + backward_s + optimizer_s - wait_s[static_cast<int>(Wait::kTensorParallel)] -
         wait_s[static_cast<int>(Wait::kDataParallel)];
}

namespace {

double seconds(Timeline::Clock::time_point a, Timeline::Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Stream streamOf(Wait kind) {
  return kind == Wait::kTensorParallel ? Stream::kTensorParallel
         : kind == Wait::kPipeline     ? Stream::kPipeline
                                       : Stream::kDataParallel;
}

const char* waitName(Wait kind) {
  return kind == Wait::kTensorParallel ? "wait tp" : kind == Wait::kPipeline ? "wait pp" : "wait dp";
}

}  // namespace

void Timeline::keep(Stream stream, const std::string& name, Clock::time_point start, Clock::time_point end,
                    int64_t bytes) {
  if (!recording_) return;
  spans_.push_back(Span{stream, name, seconds(epoch_, start) * 1e6, seconds(start, end) * 1e6, bytes});
}

void Timeline::computeSpan(const std::string& name, Clock::time_point start, Clock::time_point end, bool backward) {
  (backward ? step_.backward_s : step_.forward_s) += seconds(start, end);
  keep(Stream::kCompute, name, start, end, 0);
}

void Timeline::optimizerSpan(Clock::time_point start, Clock::time_point end) {
  step_.optimizer_s += seconds(start, end);
  keep(Stream::kCompute, "optimizer", start, end, 0);
}

void Timeline::communicationSpan(Wait kind, const std::string& name, Clock::time_point start, Clock::time_point end,
                                 int64_t bytes) {
  step_.bytes[static_cast<int>(kind)] += bytes;
  if (end < start) end = start;  // a collective whose completion time is unknown (already counted)
  keep(streamOf(kind), name, start, end, bytes);
}

void Timeline::waitSpan(Wait kind, Clock::time_point start, Clock::time_point end) {
  step_.wait_s[static_cast<int>(kind)] += seconds(start, end);
  keep(Stream::kWaits, waitName(kind), start, end, 0);
}

uint64_t pipelineFlowKey(int micro_batch, int from_virtual_stage, bool backward, int tp, int dp) {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (uint64_t v : {uint64_t(micro_batch), uint64_t(from_virtual_stage), uint64_t(backward), uint64_t(tp), uint64_t(dp)}) {
    h = (h ^ v) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  return h;
}

void Timeline::flow(const std::string& name, uint64_t key, Clock::time_point at, bool out) {
  if (!recording_) return;
  const uint64_t id = (key ^ (steps_ * 0x94d049bb133111ebULL)) >> 12;  // JSON numbers stay exact below 2^53
  flows_.push_back(Flow{name, id, seconds(epoch_, at) * 1e6, out});
}

StepTimes Timeline::takeStep() {
  const StepTimes out = step_;
  step_ = StepTimes{};
  ++steps_;
  return out;
}

std::string Timeline::traceEvents(int pid, const std::string& process_name, int sort_index) const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), R"({"name":"process_name","ph":"M","pid":%d,"args":{"name":"%s"}})", pid,
                process_name.c_str());
  out += line;
  if (sort_index >= 0) {
    std::snprintf(line, sizeof(line), R"(,{"name":"process_sort_index","ph":"M","pid":%d,"args":{"sort_index":%d}})",
                  pid, sort_index);
    out += line;
  }
  for (int t = 0; t < static_cast<int>(Stream::kCount); ++t) {
    std::snprintf(line, sizeof(line), R"(,{"name":"thread_name","ph":"M","pid":%d,"tid":%d,"args":{"name":"%s"}})",
                  pid, t, streamName(static_cast<Stream>(t)));
    out += line;
  }
  for (const Span& s : spans_) {
    std::snprintf(line, sizeof(line), R"(,{"name":"%s","ph":"X","pid":%d,"tid":%d,"ts":%.1f,"dur":%.1f,"args":{"bytes":%lld}})",
                  s.name.c_str(), pid, static_cast<int>(s.stream), s.start_us, s.duration_us,
                  static_cast<long long>(s.bytes));
    out += line;
  }
  // Arrows bind to the compute span around their time: "s" leaves the producing span, "f" (bp "e") enters the
  // consuming one.
  for (const Flow& f : flows_) {
    std::snprintf(line, sizeof(line), R"(,{"name":"%s","cat":"micro-batch","ph":"%s",%s"id":%llu,"pid":%d,"tid":%d,"ts":%.1f})",
                  f.name.c_str(), f.out ? "s" : "f", f.out ? "" : R"("bp":"e",)", static_cast<unsigned long long>(f.id),
                  pid, static_cast<int>(Stream::kCompute), f.at_us);
    out += line;
  }
  return out;
}

}  // namespace megascale::trainer
