// What a run reports: a progress line per step, a CSV row per step, the summary (stdout and JSON).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "trainer/monitor/timeline.h"

namespace megascale::trainer {

struct StepRecord {
  int64_t step = 0;  // 0-based
  double loss = 0, lr = 0, grad_norm = 0;
  double seconds = 0;  // this step's wall time
  double tokens_per_s = 0, mfu = 0;
  double elapsed = 0;  // since the run started
  StepTimes times;     // this rank's timers (the reporting rank's)
};

struct RunSummary {
  int64_t steps_run = 0, first_step = 0, total_steps = 0, parameters = 0, tokens_per_step = 0;
  double tokens_per_s = 0, mfu = 0, first_loss = 0, final_loss = 0, elapsed_s = 0;
  double gemm_peak_gflops = 0, flops_per_token = 0;
  std::string gemm_backend, precision, block;
  int threads = 0;
  // Per step, averaged like tokens_per_s: compute (waits taken out) and exposed communication by kind.
  double compute_s = 0, exposed_s = 0, wait_tp_s = 0, wait_pp_s = 0, wait_dp_s = 0;
  std::string layout;  // "" for one process
  // Time the training loop spent blocked in checkpoint saves (memory and disk), and how many there were.
  int64_t checkpoint_saves = 0;
  double checkpoint_blocked_s = 0;
};

/// "step   12/300 | loss 3.4512 | lr 2.97e-04 | 4,123 tok/s | MFU 48.1% | ETA 1m02s"
std::string progressLine(const StepRecord& r, int64_t total_steps, double eta_seconds);

class CsvLog {
 public:
  /// An empty path writes nothing. A run that resumed after `resumed_steps` continues the file it finds there:
  /// the rows of those steps are kept and later ones (steps redone after a restart) dropped, so the file reads
  /// as one run. Throws std::runtime_error if the file cannot be created.
  explicit CsvLog(const std::string& path, int64_t resumed_steps = 0);
  ~CsvLog();
  void add(const StepRecord& r);

 private:
  std::FILE* file_ = nullptr;
};

std::string summaryText(const RunSummary& s);
/// Throws std::runtime_error if the file cannot be written.
void writeSummaryJson(const std::string& path, const RunSummary& s);

/// The tokens/s and MFU of a run: steps after the first (which pays for warm-up) when there are several.
void summarizeThroughput(const std::vector<StepRecord>& records, RunSummary& s);

}  // namespace megascale::trainer
