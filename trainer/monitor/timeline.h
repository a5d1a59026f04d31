// Per-rank timers of the parallel trainer: every forward and backward of a chunk, every transfer and collective
// (with bytes, drawn from issue to completion), the optimizer step, and the time the rank waited for each kind of
// communication (exposed, not hidden behind compute; the pipeline's waits include its bubble). Sums per step
// feed the progress report and the ablation benchmark; while tracing, the spans themselves are kept and written
// as Chrome/Perfetto trace events, one process per rank and one track per stream.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace megascale::trainer {

enum class Stream { kCompute = 0, kTensorParallel, kPipeline, kDataParallel, kWaits, kCount };
const char* streamName(Stream stream);

enum class Wait { kTensorParallel = 0, kPipeline, kDataParallel, kCount };

/// The same number on the sending and the receiving rank of one pipeline message: its micro-batch, the virtual
/// stage it leaves, its direction (activations forward, gradients backward) and the pipeline's column (tp, dp).
uint64_t pipelineFlowKey(int micro_batch, int from_virtual_stage, bool backward, int tp, int dp);

struct StepTimes {
  double forward_s = 0, backward_s = 0, optimizer_s = 0;  // spans on the compute stream (waits inside included)
  double wait_s[static_cast<int>(Wait::kCount)] = {};     // exposed communication by kind
  int64_t bytes[static_cast<int>(Wait::kCount)] = {};     // bytes this rank sent or reduced, by kind
  double waited(Wait w) const { return wait_s[static_cast<int>(w)]; }
  double exposed() const;                                 // all waits
  /// The spans less the TP and DP waits inside them (pipeline waits come between the spans).
  double compute() const;
};

class Timeline {
 public:
  using Clock = std::chrono::steady_clock;

  explicit Timeline(Clock::time_point epoch = Clock::now()) : epoch_(epoch) {}

  /// Spans are kept for the trace only while recording.
  void setRecording(bool on) { recording_ = on; }
  bool recording() const { return recording_; }

  void computeSpan(const std::string& name, Clock::time_point start, Clock::time_point end, bool backward);
  void optimizerSpan(Clock::time_point start, Clock::time_point end);
  /// A transfer or collective from issue to completion.
  void communicationSpan(Wait kind, const std::string& name, Clock::time_point start, Clock::time_point end,
                         int64_t bytes);
  void waitSpan(Wait kind, Clock::time_point start, Clock::time_point end);

  /// A micro-batch's arrow in the trace, from the compute span that produced it on one rank to the one that
  /// consumes it on the next: `key` names the message the same way on both ranks (pipelineFlowKey); the step
  /// is mixed in here. `at` lies inside the span the arrow leaves or enters.
  void flowOut(const std::string& name, uint64_t key, Clock::time_point at) { flow(name, key, at, true); }
  void flowIn(const std::string& name, uint64_t key, Clock::time_point at) { flow(name, key, at, false); }

  /// The sums since the last call; counts the step.
  StepTimes takeStep();

  /// This rank's kept spans as Chrome trace events (a comma-separated list of JSON objects, no brackets),
  /// with process and track names. pid = the rank; `sort_index` orders the processes in the viewer.
  std::string traceEvents(int pid, const std::string& process_name, int sort_index = -1) const;

 private:
  struct Span {
    Stream stream;
    std::string name;
    double start_us, duration_us;
    int64_t bytes;
  };
  struct Flow {
    std::string name;
    uint64_t id;
    double at_us;
    bool out;
  };
  void keep(Stream stream, const std::string& name, Clock::time_point start, Clock::time_point end, int64_t bytes);
  void flow(const std::string& name, uint64_t key, Clock::time_point at, bool out);

  Clock::time_point epoch_;
  bool recording_ = false;
  StepTimes step_;
  uint64_t steps_ = 0;
  std::vector<Span> spans_;
  std::vector<Flow> flows_;
};

}  // namespace megascale::trainer
