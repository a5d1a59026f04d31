#include "trainer/program/run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "trainer/io/atomic_file.h"

namespace megascale::trainer {

namespace {

std::string duration(double seconds) {
  char buffer[32];
  const long s = std::lround(std::max(0.0, seconds));
  if (s >= 3600) {
    std::snprintf(buffer, sizeof(buffer), "%ldh%02ldm", s / 3600, (s / 60) % 60);
  } else if (s >= 60) {
    std::snprintf(buffer, sizeof(buffer), "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buffer, sizeof(buffer), "%lds", s);
  }
  return buffer;
}

std::string thousands(double v) {
  const std::string digits = std::to_string(std::llround(v));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && digits[i - 1] != '-' && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

}  // namespace

std::string progressLine(const StepRecord& r, int64_t total_steps, double eta_seconds) {
  char buffer[200];
  const int width = static_cast<int>(std::to_string(total_steps).size());
  std::snprintf(buffer, sizeof(buffer), "step %*lld/%lld | loss %.4f | lr %.2e | %s tok/s | MFU %.1f%% | ETA %s", width,
                static_cast<long long>(r.step + 1), static_cast<long long>(total_steps), r.loss, r.lr,
                thousands(r.tokens_per_s).c_str(), r.mfu * 100, duration(eta_seconds).c_str());
  return buffer;
}

namespace {

constexpr const char* kCsvHeader =
    "step,loss,lr,grad_norm,step_seconds,tokens_per_s,mfu,elapsed_s,compute_s,tp_wait_s,pp_wait_s,dp_wait_s,tp_bytes,"
    "pp_bytes,dp_bytes";

// The rows of an earlier run's CSV for steps 1..steps, or nothing when it is not our CSV.
std::vector<std::string> earlierRows(const std::string& path, int64_t steps) {
  std::ifstream in(path);
  std::string line;
  std::vector<std::string> rows;
  if (steps <= 0 || !std::getline(in, line) || line != kCsvHeader) return rows;
  while (std::getline(in, line)) {
    const long long step = std::atoll(line.c_str());
    if (step >= 1 && step <= steps) rows.push_back(line);
  }
  return rows;
}

}  // namespace

CsvLog::CsvLog(const std::string& path, int64_t resumed_steps) {
  if (path.empty()) return;
  // The kept rows go into a new file that replaces the old one at once: a rank killed meanwhile loses nothing.
  std::string start = std::string(kCsvHeader) + "\n";
  for (const std::string& row : earlierRows(path, resumed_steps)) start += row + "\n";
  writeFileAtomically(path, start);
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr) throw std::runtime_error("cannot create CSV file " + path);
}

CsvLog::~CsvLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void CsvLog::add(const StepRecord& r) {
  if (file_ == nullptr) return;
  // %.9g round-trips a float32 loss exactly, so two runs' CSVs can be compared bit for bit.
  const StepTimes& t = r.times;
  std::fprintf(file_, "%lld,%.9g,%.9g,%.9g,%.6f,%.1f,%.4f,%.3f,%.6f,%.6f,%.6f,%.6f,%lld,%lld,%lld\n",
               static_cast<long long>(r.step + 1), r.loss, r.lr, r.grad_norm, r.seconds, r.tokens_per_s, r.mfu,
               r.elapsed, t.compute(), t.waited(Wait::kTensorParallel), t.waited(Wait::kPipeline),
               t.waited(Wait::kDataParallel), static_cast<long long>(t.bytes[0]), static_cast<long long>(t.bytes[1]),
               static_cast<long long>(t.bytes[2]));
  std::fflush(file_);
}

void summarizeThroughput(const std::vector<StepRecord>& records, RunSummary& s) {
  const size_t skip = records.size() > 1 ? 1 : 0;
  double seconds = 0;
  for (size_t i = skip; i < records.size(); ++i) seconds += records[i].seconds;
  const double tokens = static_cast<double>(s.tokens_per_step) * static_cast<double>(records.size() - skip);
  s.tokens_per_s = seconds > 0 ? tokens / seconds : 0;
  const double steps = static_cast<double>(std::max<size_t>(1, records.size() - skip));
  s.compute_s = s.exposed_s = s.wait_tp_s = s.wait_pp_s = s.wait_dp_s = 0;
  for (size_t i = skip; i < records.size(); ++i) {
    const StepTimes& t = records[i].times;
    s.compute_s += t.compute() / steps;
    s.exposed_s += t.exposed() / steps;
    s.wait_tp_s += t.waited(Wait::kTensorParallel) / steps;
    s.wait_pp_s += t.waited(Wait::kPipeline) / steps;
    s.wait_dp_s += t.waited(Wait::kDataParallel) / steps;
  }
  s.mfu = s.gemm_peak_gflops > 0 ? s.tokens_per_s * s.flops_per_token / (s.gemm_peak_gflops * 1e9) : 0;
}

std::string summaryText(const RunSummary& s) {
  char buffer[512];
  std::snprintf(buffer, sizeof(buffer),
                "trained steps %lld..%lld (%lld this run) in %.1f s: loss %.4f -> %.4f | %s tok/s | MFU %.1f%% of the "
                "measured %s GEMM peak %.0f GFLOP/s (%.1f MFLOP/token, %d threads, %s, %s block, %lld parameters)",
                static_cast<long long>(s.first_step + 1), static_cast<long long>(s.first_step + s.steps_run),
                static_cast<long long>(s.steps_run), s.elapsed_s, s.first_loss, s.final_loss,
                thousands(s.tokens_per_s).c_str(), s.mfu * 100, s.gemm_backend.c_str(), s.gemm_peak_gflops,
                s.flops_per_token / 1e6, s.threads, s.precision.c_str(), s.block.c_str(),
                static_cast<long long>(s.parameters));
  std::string out = buffer;
  if (!s.layout.empty()) {
    std::snprintf(buffer, sizeof(buffer),
                  "\nper step on the reporting rank (%s): compute %.1f ms, waiting %.1f ms (tensor parallel %.1f, "
                  "pipeline incl. bubble %.1f, data parallel %.1f)",
                  s.layout.c_str(), s.compute_s * 1e3, s.exposed_s * 1e3, s.wait_tp_s * 1e3, s.wait_pp_s * 1e3,
                  s.wait_dp_s * 1e3);
    out += buffer;
  }
  if (s.checkpoint_saves > 0) {
    const double step_s = s.elapsed_s / static_cast<double>(std::max<int64_t>(1, s.steps_run));
    const double each_s = s.checkpoint_blocked_s / static_cast<double>(s.checkpoint_saves);
    std::snprintf(buffer, sizeof(buffer), "\ncheckpoints: %lld saves blocked training %.2f ms each (%.2f%% of the %.1f ms steps)",
                  static_cast<long long>(s.checkpoint_saves), each_s * 1e3,
                  s.checkpoint_blocked_s / std::max(s.elapsed_s, 1e-9) * 100, step_s * 1e3);
    out += buffer;
  }
  return out;
}

void writeSummaryJson(const std::string& path, const RunSummary& s) {
  std::ostringstream j;
  j.precision(9);
  j << "{\n  \"tokens_per_s\": " << s.tokens_per_s << ",\n  \"mfu\": " << s.mfu << ",\n  \"first_loss\": "
    << s.first_loss << ",\n  \"final_loss\": " << s.final_loss << ",\n  \"first_step\": " << s.first_step
    << ",\n  \"steps_run\": " << s.steps_run << ",\n  \"total_steps\": " << s.total_steps
    << ",\n  \"elapsed_s\": " << s.elapsed_s << ",\n  \"gemm_backend\": \"" << s.gemm_backend
    << "\",\n  \"gemm_peak_gflops\": " << s.gemm_peak_gflops << ",\n  \"model_flops_per_token\": " << s.flops_per_token
    << ",\n  \"parameters\": " << s.parameters << ",\n  \"tokens_per_step\": " << s.tokens_per_step
    << ",\n  \"threads\": " << s.threads << ",\n  \"precision\": \"" << s.precision << "\",\n  \"block\": \"" << s.block
    << "\",\n  \"layout\": \"" << s.layout << "\",\n  \"compute_s_per_step\": " << s.compute_s
    << ",\n  \"exposed_comm_s_per_step\": " << s.exposed_s << ",\n  \"tp_wait_s_per_step\": " << s.wait_tp_s
    << ",\n  \"pp_wait_s_per_step\": " << s.wait_pp_s << ",\n  \"dp_wait_s_per_step\": " << s.wait_dp_s
    << ",\n  \"checkpoint_saves\": " << s.checkpoint_saves << ",\n  \"checkpoint_blocked_s\": " << s.checkpoint_blocked_s
    << "\n}\n";
  writeFileAtomically(path, j.str());
}

}  // namespace megascale::trainer
