#include "trainer/program/training_run.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <stdexcept>

#include <cstdlib>
#include <memory>

#include "common/config.h"
#include "common/heartbeat.h"
#include "common/stop_request.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/data/host_data.h"
#include "trainer/data/loader.h"
#include "trainer/kernels/gemm_bf16.h"
#include "trainer/model/random.h"
#include "trainer/program/loss_plot.h"
#include "trainer/program/run_report.h"
#include "trainer/program/step_engine.h"
#include "trainer/data/training_data.h"

namespace megascale::trainer {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Under a launcher (megascale-run, srun, mpirun, torchrun) or asked for model parallelism: the parallel trainer.
bool runsAsJob(const TrainOptions& o) {
  for (const char* name : {"MEGASCALE_WORLD_SIZE", "WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  if (o.tp * o.pp > 1 || o.virtual_stages > 1) {
    throw std::invalid_argument("--tp, --pp and --virtual-stages need a job of several processes: run under "
                                "megascale-run -n N (or srun, mpirun)");
  }
  return false;
}

// Resumes from the newest checkpoint of host memory (each rank's own) and disk, memory first: at the same step
// no disk is read. A memory checkpoint that cannot be loaded falls back to disk. Collective under a launcher:
// every rank sees the same directories.
std::optional<TrainingState> restoreNewest(StepEngine& engine, const std::string& memory_dir,
                                           const std::string& disk_dir, std::ostream& log) {
  std::optional<TrainingState> state;
  if (!memory_dir.empty()) {
    try {
      state = engine.restore({memory_dir, 0, true}, log);
    } catch (const std::exception& e) {
      log << "the checkpoint in host memory cannot be loaded (" << e.what() << "); trying "
          << (disk_dir.empty() ? std::string("none on disk") : disk_dir) << "\n";
    }
  }
  if (disk_dir.empty() || (state && latestStep(disk_dir) <= state->step)) return state;
  if (auto from_disk = engine.restore({disk_dir}, log)) return from_disk;
  return state;
}

}  // namespace

int runTraining(const TrainOptions& options) {
  stop_request::install();  // a pre-emption notice: checkpoint after the current step and end
  TrainOptions o = options;
  const bool bf16_run = o.precision == "bf16";
  if (bf16_run && !cpuHasBf16Compute()) {
    throw std::invalid_argument("--precision bf16 needs a CPU with AMX-BF16 or AVX512-BF16 (this one has neither); "
                                "use --precision fp32");
  }
  const bool job = runsAsJob(o);
  if (!job) omp_set_num_threads(o.threads > 0 ? o.threads : omp_get_num_procs());

  const auto load = [&] { return loadTrainingData(o.data, o.tokenizer, o.checkpoint_dir); };
  std::shared_ptr<Communicator> world, host;
  TrainingData data;
  if (job) {
    const CommunicatorOptions comm_options = CommunicatorOptions::fromEnvironment();
    world = Communicator::createFromEnvironment(comm_options);
    // A host's ranks are consecutive (megascale-run, srun and mpirun place them so): its first rank names it.
    const int local = world->localRank();
    host = world->split(local >= 0 ? world->rank() - local : world->rank(), world->rank());
    host->setName("host");
    data = loadOncePerHost(*host, comm_options.timeout, load);
  } else {
    data = load();
  }
  if (o.model.vocab == 0) o.model.vocab = data.vocab;
  if (o.model.vocab < data.vocab) {
    throw std::invalid_argument("--vocab " + std::to_string(o.model.vocab) + " is smaller than the data's vocabulary (" +
                                std::to_string(data.vocab) + ")");
  }
  std::unique_ptr<StepEngine> engine =
      job ? makeParallelEngine(o, world, host->size(), std::cout) : makeSingleProcessEngine(o, std::cout);
  // Only the reporting rank writes the run's lines and files; the others stay quiet unless they fail.
  std::ostream quiet(nullptr);
  std::ostream& log = engine->reports() ? std::cout : quiet;
  log << "megascale-train options:\n" << describeOptions(o) << "data: " << data.description << "\n";
  if (!engine->describe().empty()) log << engine->describe() << "\n";

  const LrSchedule schedule{o.lr, o.min_lr, o.warmup, o.steps};
  TrainingState state;
  Random random(o.seed ^ 0x5eed);
  state.rng = random.state();
  // Host memory the launcher keeps across restarts (stage 1 of the two-stage checkpoints; disk is stage 2).
  const std::string memory_dir = job && o.memory_checkpoint_every > 0 ? config::getString("MEGASCALE_MEMORY_CHECKPOINTS")
                                                                       : std::string();
  if (o.resume) {
    if (auto restored = restoreNewest(*engine, memory_dir, o.checkpoint_dir, log)) {
      state = *restored;
      random.setState(state.rng);
    }
  }
  log << "model: " << o.model.layers << " layers, d_model " << o.model.d_model << ", " << o.model.heads
      << " heads, seq " << o.model.seq_len << ", window " << o.model.effectiveWindow() << ", vocab " << o.model.vocab
      << ", " << blockKindName(o.model.block) << " block, " << engine->parameterCount() << " parameters; "
      << optimizerKindName(o.optimizer.kind) << ", batch " << o.batch_size << ", " << omp_get_max_threads()
      << " threads\n";

  if (state.step >= o.steps) {
    log << "the checkpoint is already at step " << state.step << " of " << o.steps
        << "; nothing to train (raise --steps, or --resume 0 to start over)\n";
    return 0;
  }
  DataLoader loader(data.tokens, o.batch_size, o.model.seq_len, state.data_position);
  CsvLog csv(engine->reports() ? o.csv : "", state.step);
  RunSummary summary;
  summary.first_step = state.step;
  summary.total_steps = o.steps;
  summary.parameters = engine->parameterCount();
  summary.tokens_per_step = o.batch_size * o.model.seq_len;
  summary.gemm_peak_gflops = engine->peakGflops();
  summary.gemm_backend = engine->gemmBackend();
  summary.flops_per_token = flopsPerToken(o.model);
  summary.precision = o.precision;
  summary.block = blockKindName(o.model.block);
  summary.threads = omp_get_max_threads();
  summary.layout = engine->layout();

  std::vector<StepRecord> records;
  std::vector<double> losses;
  bool stopped_early = false;
  const auto run_start = Clock::now();
  int64_t step = state.step;
  const int64_t last = o.stop_after > 0 ? std::min(o.steps, state.step + o.stop_after) : o.steps;
  for (; step < last; ++step) {
    heartbeat::reportStep(step + 1, "step");  // tells the executor which step this rank is in
    const auto t0 = Clock::now();
    Batch batch = loader.next();
    StepRecord r;
    r.lr = schedule.at(step);
    const StepOutcome outcome = engine->step(batch, r.lr, stop_request::requested());
    if (!std::isfinite(outcome.loss)) {
      std::cerr << "megascale-train: the loss became " << outcome.loss << " at step " << step + 1
                << " (lower --lr or raise --warmup)\n";
      return 1;
    }
    r.grad_norm = outcome.grad_norm;
    r.times = outcome.times;
    r.step = step;
    r.loss = outcome.loss;
    r.seconds = secondsSince(t0);
    r.elapsed = secondsSince(run_start);
    r.tokens_per_s = static_cast<double>(summary.tokens_per_step) / r.seconds;
    r.mfu = r.tokens_per_s * summary.flops_per_token / (summary.gemm_peak_gflops * 1e9);
    records.push_back(r);
    losses.push_back(r.loss);
    csv.add(r);
    if ((step + 1) % o.log_every == 0 || step + 1 == last || outcome.stop) {
      const double eta = r.elapsed / static_cast<double>(records.size()) * static_cast<double>(last - step - 1);
      log << progressLine(r, o.steps, eta) << "\n" << std::flush;
    }
    if (outcome.stop) {  // the checkpoint after the loop saves this step
      log << "stopping after step " << step + 1 << " of " << o.steps << ": a rank received SIGUSR2 (pre-emption); "
          << (o.checkpoint_dir.empty() ? std::string("no --checkpoint-dir, so nothing is saved")
                                       : "the checkpoint goes to " + o.checkpoint_dir)
          << "\n" << std::flush;
      stopped_early = true;
      ++step;
      break;
    }
    std::vector<CheckpointTarget> targets;
    if (!memory_dir.empty() && (step + 1) % o.memory_checkpoint_every == 0) targets.push_back({memory_dir, 3, true});
    if (!o.checkpoint_dir.empty() && o.checkpoint_every > 0 && (step + 1) % o.checkpoint_every == 0 &&
        step + 1 != last) {
      targets.push_back({o.checkpoint_dir, o.keep_checkpoints});
    }
    if (!targets.empty()) {
      heartbeat::reportStep(step + 1, "ckpt");
      const auto save_start = Clock::now();
      engine->save(targets, TrainingState{step + 1, loader.position(), random.state()});
      summary.checkpoint_blocked_s += secondsSince(save_start);
      ++summary.checkpoint_saves;
    }
  }
  if (!o.checkpoint_dir.empty() && !records.empty()) {
    engine->save({{o.checkpoint_dir, o.keep_checkpoints}}, TrainingState{step, loader.position(), random.state()});
  }
  engine->finish();
  if (!o.checkpoint_dir.empty() && !records.empty()) log << "checkpoint: " << latestCheckpoint(o.checkpoint_dir) << "\n";
  summary.steps_run = static_cast<int64_t>(records.size());
  summary.elapsed_s = secondsSince(run_start);
  if (!records.empty()) {
    summary.first_loss = records.front().loss;
    summary.final_loss = records.back().loss;
  }
  summarizeThroughput(records, summary);
  log << summaryText(summary) << "\n";
  if (!engine->reports()) return 0;
  if (!o.summary_json.empty()) writeSummaryJson(o.summary_json, summary);
  if (!o.plot.empty()) writeLossPlot(o.plot, losses, static_cast<long>(summary.first_step + 1));
  if (o.sample_tokens > 0 && !stopped_early) {  // a job being pre-empted has no time to spare
    const std::string text = engine->sample(data, random, o.sample_tokens);
    if (!text.empty()) log << "sample: " << text << "\n";
  }
  return 0;
}

}  // namespace megascale::trainer
