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

StepTimes Timeline::takeStep() {
  const StepTimes out = step_;
  step_ = StepTimes{};
  return out;
}

std::string Timeline::traceEvents(int pid, const std::string& process_name) const {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), R"({"name":"process_name","ph":"M","pid":%d,"args":{"name":"%s"}})", pid,
                process_name.c_str());
  out += line;
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
  return out;
}

}  // namespace megascale::trainer
