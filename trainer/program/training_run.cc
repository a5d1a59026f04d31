#include "trainer/program/training_run.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <stdexcept>

#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/loader.h"
#include "trainer/kernels/gemm.h"
#include "trainer/model/gpt.h"
#include "trainer/model/random.h"
#include "trainer/program/loss_plot.h"
#include "trainer/program/run_report.h"
#include "trainer/program/training_data.h"

namespace megascale::trainer {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The backend choice and the MFU denominator: the best rate of the chosen backend on a square GEMM and on
// the model's own largest GEMM shape.
double chooseGemm(const TrainOptions& o, std::ostream& log) {
  const int64_t m = o.batch_size * o.model.seq_len, n = 4 * o.model.d_model, k = o.model.d_model;
  GemmChoice choice = selectGemmBackend(o.gemm, m, n, k, 0.3);
  log << "GEMM: " << choice.backend;
  if (!choice.measured.empty()) {
    log << " (measured on " << m << "x" << n << "x" << k << ":";
    for (const auto& [name, rate] : choice.measured) log << " " << name << " " << std::lround(rate);
    log << " GFLOP/s)";
  }
  const double peak = std::max(measureGemmGflops(2048, 2048, 2048, 0.3), measureGemmGflops(m, n, k, 0.3));
  log << "; peak " << std::lround(peak) << " GFLOP/s\n";
  return peak;
}

std::string sampleText(Gpt<float>& model, const TrainingData& data, Random& random, int64_t count) {
  const int64_t t = model.config().seq_len;
  std::vector<int32_t> context(data.tokens->begin(), data.tokens->begin() + std::min<int64_t>(t, data.tokens->size()));
  context.resize(static_cast<size_t>(t / 2));
  std::vector<int32_t> generated;
  const int64_t vocab = model.config().vocab;
  for (int64_t i = 0; i < count; ++i) {
    std::vector<int32_t> window(static_cast<size_t>(t), 0);
    const int64_t used = std::min<int64_t>(t, static_cast<int64_t>(context.size()));
    std::copy(context.end() - used, context.end(), window.begin());
    model.forward(window.data(), window.data(), 1);
    const float* logits = model.logits() + (used - 1) * vocab;
    const float top = *std::max_element(logits, logits + std::min<int64_t>(vocab, data.vocab));
    double total = 0;
    for (int64_t v = 0; v < data.vocab; ++v) total += std::exp(logits[v] - top);
    double pick = random.uniform() * total;
    int32_t token = 0;
    for (int64_t v = 0; v < data.vocab; ++v) {
      pick -= std::exp(logits[v] - top);
      if (pick <= 0) {
        token = static_cast<int32_t>(v);
        break;
      }
    }
    context.push_back(token);
    generated.push_back(token);
  }
  return data.tokenizer.decode(generated);
}

}  // namespace

int runTraining(const TrainOptions& options) {
  TrainOptions o = options;
  std::ostream& log = std::cout;
  if (o.precision == "bf16") {
    throw std::invalid_argument("--precision bf16 is not available in this build yet; use fp32");
  }
  const int threads = o.threads > 0 ? o.threads : omp_get_num_procs();
  omp_set_num_threads(threads);

  TrainingData data = loadTrainingData(o.data, o.tokenizer, o.checkpoint_dir);
  log << "data: " << data.description << "\n";
  if (o.model.vocab == 0) o.model.vocab = data.vocab;
  if (o.model.vocab < data.vocab) {
    throw std::invalid_argument("--vocab " + std::to_string(o.model.vocab) + " is smaller than the data's vocabulary (" +
                                std::to_string(data.vocab) + ")");
  }
  const double peak_gflops = chooseGemm(o, log);

  Gpt<float> model(o.model);
  model.initialize(o.seed);
  Optimizer<float> optimizer(o.optimizer, model.parameterTable());
  const LrSchedule schedule{o.lr, o.min_lr, o.warmup, o.steps};
  TrainingState state;
  Random random(o.seed ^ 0x5eed);
  state.rng = random.state();
  if (!o.checkpoint_dir.empty() && o.resume) {
    const std::string latest = latestCheckpoint(o.checkpoint_dir);
    if (!latest.empty()) {
      state = loadCheckpoint(latest, model, optimizer);
      random.setState(state.rng);
      log << "resumed from " << latest << " at step " << state.step << "\n";
    }
  }
  log << "model: " << o.model.layers << " layers, d_model " << o.model.d_model << ", " << o.model.heads
      << " heads, seq " << o.model.seq_len << ", window " << o.model.effectiveWindow() << ", vocab " << o.model.vocab
      << ", " << blockKindName(o.model.block) << " block, " << model.parameterCount() << " parameters; "
      << optimizerKindName(o.optimizer.kind) << ", batch " << o.batch_size << ", " << threads << " threads\n";

  DataLoader loader(data.tokens, o.batch_size, o.model.seq_len, state.data_position);
  CsvLog csv(o.csv);
  RunSummary summary;
  summary.first_step = state.step;
  summary.total_steps = o.steps;
  summary.parameters = model.parameterCount();
  summary.tokens_per_step = o.batch_size * o.model.seq_len;
  summary.gemm_peak_gflops = peak_gflops;
  summary.gemm_backend = currentGemmBackend();
  summary.flops_per_token = flopsPerToken(o.model);
  summary.precision = o.precision;
  summary.block = blockKindName(o.model.block);
  summary.threads = threads;

  std::vector<StepRecord> records;
  std::vector<double> losses;
  const auto run_start = Clock::now();
  int64_t step = state.step;
  const int64_t last = o.stop_after > 0 ? std::min(o.steps, state.step + o.stop_after) : o.steps;
  for (; step < last; ++step) {
    const auto t0 = Clock::now();
    Batch batch = loader.next();
    model.zeroGradients();
    const float loss = model.forward(batch.inputs.data(), batch.targets.data(), o.batch_size);
    if (!std::isfinite(loss)) {
      std::cerr << "megascale-train: the loss became " << loss << " at step " << step + 1
                << " (lower --lr or raise --warmup)\n";
      return 1;
    }
    model.backward();
    StepRecord r;
    r.grad_norm = clipGradientNorm(model.gradients(), model.parameterCount(), o.optimizer.clip_norm);
    r.lr = schedule.at(step);
    optimizer.step(model.parameters(), model.gradients(), r.lr);
    r.step = step;
    r.loss = loss;
    r.seconds = secondsSince(t0);
    r.elapsed = secondsSince(run_start);
    r.tokens_per_s = static_cast<double>(summary.tokens_per_step) / r.seconds;
    r.mfu = r.tokens_per_s * summary.flops_per_token / (peak_gflops * 1e9);
    records.push_back(r);
    losses.push_back(loss);
    csv.add(r);
    if ((step + 1) % o.log_every == 0 || step + 1 == last) {
      const double eta = r.elapsed / static_cast<double>(records.size()) * static_cast<double>(last - step - 1);
      log << progressLine(r, o.steps, eta) << "\n" << std::flush;
    }
    if (!o.checkpoint_dir.empty() && o.checkpoint_every > 0 && (step + 1) % o.checkpoint_every == 0 &&
        step + 1 != last) {
      saveToDirectory(o.checkpoint_dir, o.keep_checkpoints, TrainingState{step + 1, loader.position(), random.state()},
                      model, optimizer);
    }
  }
  if (!o.checkpoint_dir.empty() && !records.empty()) {
    saveToDirectory(o.checkpoint_dir, o.keep_checkpoints, TrainingState{step, loader.position(), random.state()},
                    model, optimizer);
    log << "checkpoint: " << checkpointPath(o.checkpoint_dir, step) << "\n";
  }
  summary.steps_run = static_cast<int64_t>(records.size());
  summary.elapsed_s = secondsSince(run_start);
  if (!records.empty()) {
    summary.first_loss = records.front().loss;
    summary.final_loss = records.back().loss;
  }
  summarizeThroughput(records, summary);
  log << summaryText(summary) << "\n";
  if (!o.summary_json.empty()) writeSummaryJson(o.summary_json, summary);
  if (!o.plot.empty()) writeLossPlot(o.plot, losses, static_cast<long>(summary.first_step + 1));
  if (o.sample_tokens > 0) {
    log << "sample: " << sampleText(model, data, random, o.sample_tokens) << "\n";
  }
  return 0;
}

}  // namespace megascale::trainer
