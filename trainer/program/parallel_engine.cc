// This rank of the 3D-parallel trainer under a launcher. World rank 0 measures the GEMM backends and the peak
// once, with every core, and the others take its choice, so every rank computes alike.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "collectives/communicator.h"
#include "common/config.h"
#include "trainer/checkpoint/sharded_checkpoint.h"
#include "trainer/kernels/gemm.h"
#include "trainer/kernels/gemm_bf16.h"
#include "trainer/monitor/stragglers.h"
#include "common/plot.h"
#include "trainer/parallel/parallel_checkpoint.h"
#include "trainer/parallel/parallel_trainer.h"
#include "trainer/program/gemm_setup.h"
#include "trainer/program/sampling.h"
#include "trainer/program/step_engine.h"

namespace megascale::trainer {

namespace {

struct GemmDecision {  // what rank 0 broadcasts
  double peak_gflops = 0;
  char backend[64] = {};
  char bf16_backend[64] = {};
};

// A restarted job (megascale-run --max-restarts) runs on the same host as its first run: the decision that run
// measured, kept in the launcher's host memory with what it was measured for, spares the restart the
// measurement (seconds of every core).
std::string gemmDecisionKey(const TrainOptions& o) {
  std::ostringstream key;
  key << "gemm=" << o.gemm << " precision=" << o.precision << " batch=" << o.batch_size << " seq=" << o.model.seq_len
      << " d_model=" << o.model.d_model;
  return key.str();
}

bool readKeptDecision(const std::string& path, const std::string& key, GemmDecision& decision) {
  std::ifstream in(path);
  std::string kept_key, backend, bf16_backend;
  double peak = 0;
  if (!std::getline(in, kept_key) || kept_key != key || !(in >> peak >> backend >> bf16_backend) || !(peak > 0)) {
    return false;
  }
  decision.peak_gflops = peak;
  std::strncpy(decision.backend, backend.c_str(), sizeof(decision.backend) - 1);
  if (bf16_backend != "-") std::strncpy(decision.bf16_backend, bf16_backend.c_str(), sizeof(decision.bf16_backend) - 1);
  return true;
}

void keepDecision(const std::string& path, const std::string& key, const GemmDecision& decision) {
  std::ofstream out(path + ".tmp");
  out << key << "\n" << decision.peak_gflops << " " << decision.backend << " "
      << (decision.bf16_backend[0] != '\0' ? decision.bf16_backend : "-") << "\n";
  out.close();
  if (out) std::rename((path + ".tmp").c_str(), path.c_str());
}

void waitOrThrow(const std::shared_ptr<Work>& work, std::chrono::milliseconds timeout, const char* what) {
  const Status status = work->wait(timeout);
  if (!status.isOk()) throw Error(status.code(), std::string(what) + ": " + status.message());
}

ParallelConfig parallelConfig(const TrainOptions& o, std::chrono::milliseconds timeout) {
  ParallelConfig p;
  p.tp = o.tp;
  p.pp = o.pp;
  p.virtual_stages = o.virtual_stages;
  p.micro_batches = o.micro_batches;
  p.pp_extra_warmup = o.pp_extra_warmup;
  p.micro_batch_group = o.micro_batch_group;
  p.overlap_tp = o.overlaps("tp");
  p.overlap_pp = o.overlaps("pp");
  p.overlap_dp = o.overlaps("dp");
  p.tp_chunks = o.tp_chunks;
  p.bucket_elements = o.bucket_params;
  p.dp_bf16_communication = o.dp_comm_precision == "bf16";
  p.pp_bf16_communication = o.pp_comm_precision == "bf16";
  p.pp_traffic_class = o.pp_traffic_class;
  p.timeout = timeout;
  return p;
}

class ParallelEngine final : public StepEngine {
 public:
  ParallelEngine(const TrainOptions& o, std::shared_ptr<Communicator> world, int host_ranks, std::ostream& log)
      : options_(o), world_(std::move(world)) {
    timeout_ = CommunicatorOptions::fromEnvironment().timeout;
    const int local = std::max(1, host_ranks);
    hosts_ = std::max(1, world_->size() / local);
    decideGemm(o, log);
    // Ranks share the host's cores: each gets its part, so none starves when ranks outnumber cores.
    threads_ = o.threads > 0 ? o.threads : std::max(1, omp_get_num_procs() / local);
    omp_set_num_threads(threads_);
    trainer_ = std::make_unique<ParallelTrainer>(o.model, o.optimizer, parallelConfig(o, timeout_), o.batch_size,
                                                 world_, o.seed, o.precision == "bf16" ? Precision::kBf16
                                                                                       : Precision::kFp32);
    for (const auto& chunk : trainer_->chunks()) local_parameters_ += chunk->parameterCount();
    checkpointer_ = std::make_unique<ParallelCheckpointer>(*trainer_, o.model, o.optimizer, timeout_);
  }

  StepOutcome step(const Batch& batch, double lr, bool stop_vote) override {
    // The trace keeps a few steps after the first (which pays for warm-up and connections).
    trainer_->timeline().setRecording(!options_.trace.empty() && steps_run_ >= 1 &&
                                      steps_run_ <= options_.trace_steps);
    ++steps_run_;
    const ParallelStepResult r = trainer_->step(batch.inputs.data(), batch.targets.data(), lr, stop_vote);
    const StepTimes times = trainer_->timeline().takeStep();
    compute_s_.push_back(times.compute());
    return StepOutcome{r.loss, r.grad_norm, times, r.stop};
  }
  std::string layout() const override { return trainer_->groups().layout.describe(); }

  int64_t parameterCount() const override {
    int64_t whole = 0;
    for (const auto& spec : buildParameterTable(options_.model, {})) whole += spec.size();
    return whole;
  }
  bool reports() const override { return trainer_->isReporter(); }
  double peakGflops() const override { return peak_ * hosts_; }
  std::string gemmBackend() const override { return backend_; }

  std::string describe() const override {
    const ProcessGroups& g = trainer_->groups();
    std::ostringstream s;
    s << "parallel: " << g.layout.describe() << " (" << world_->size() << " ranks on " << hosts_ << " host"
      << (hosts_ > 1 ? "s" : "") << ", " << threads_ << " threads each), " << options_.micro_batches
      << " micro-batches of " << trainer_->microBatchSize();
    if (options_.virtual_stages > 1) {
      s << ", interleaved 1F1B with " << options_.virtual_stages << " virtual stages";
      if (options_.micro_batch_group > 0) s << " in groups of " << options_.micro_batch_group << " micro-batches";
    }
    if (options_.pp > 1 && options_.pp_extra_warmup > 0) {
      s << ", eager 1F1B (" << options_.pp_extra_warmup << " more in flight per downstream stage)";
    }
    if (options_.pp > 1) s << ", pipeline traffic in " << options_.pp_comm_precision;
    s << ", overlap " << options_.overlap;
    if (world_->size() > options_.tp * options_.pp) s << ", data-parallel traffic in " << options_.dp_comm_precision;
    s << "\nmemory on the reporting rank: " << local_parameters_
      << " parameters; ZeRO-2 optimizer state " << trainer_->optimizer().optimizerStateBytes()
      << " bytes and master weights " << trainer_->optimizer().masterWeightBytes() << " bytes ("
      << trainer_->optimizer().bucketCount() << " gradient buckets)";
    return s.str();
  }

  void save(const std::vector<CheckpointTarget>& targets, const TrainingState& state) override {
    checkpointer_->save(targets, state);
  }
  std::optional<TrainingState> restore(const CheckpointTarget& from, std::ostream& log) override {
    if (from.rank_local) {
      auto state = checkpointer_->restoreRankLocal(from.dir);
      if (state) log << "resumed from " << from.dir << " (each rank's own checkpoint) at step " << state->step << std::endl;
      return state;
    }
    auto state = checkpointer_->restore(from.dir);
    if (state) log << "resumed from " << latestCheckpoint(from.dir) << " at step " << state->step << std::endl;
    return state;
  }
  void finish() override {
    checkpointer_->finish();
    if (!options_.heatmap.empty()) writeHeatmap();
    if (options_.trace.empty()) return;
    const std::string trace = trainer_->gatherTrace();
    if (world_->rank() != 0) return;
    std::ofstream out(options_.trace);
    out << trace;
    if (!out) throw std::runtime_error("cannot write the trace to " + options_.trace);
    std::cout << "trace: " << options_.trace << " (" << options_.trace_steps << " steps of " << world_->size()
              << " ranks; open in ui.perfetto.dev or chrome://tracing)\n";
  }
  // The whole model, assembled from the run's last checkpoint (no checkpoint directory: no sample).
  std::string sample(const TrainingData& data, Random& random, int64_t count) override {
    if (options_.checkpoint_dir.empty()) return "";
    Gpt<float> whole(options_.model);
    const CheckpointReader reader(latestCheckpoint(options_.checkpoint_dir), options_.model, options_.optimizer);
    std::vector<float> m(static_cast<size_t>(whole.parameterCount())), v(m.size());
    reader.slice(whole.parameterTable(), whole.parameters(), m.data(), v.data());
    omp_set_num_threads(omp_get_num_procs());
    return sampleText(whole, data, random, count);
  }

 private:
  void decideGemm(const TrainOptions& o, std::ostream& log) {
    const bool bf16 = o.precision == "bf16";
    GemmDecision decision;
    const std::string memory_dir = config::getString("MEGASCALE_MEMORY_CHECKPOINTS");
    const std::string kept = memory_dir.empty() ? "" : memory_dir + "/gemm-decision";
    bool measured = false;
    if (world_->rank() == 0 && (kept.empty() || !readKeptDecision(kept, gemmDecisionKey(o), decision))) {
      omp_set_num_threads(omp_get_num_procs());  // the host's peak: every core, the other ranks waiting
      decision.peak_gflops = chooseGemm(o, bf16, log);
      std::strncpy(decision.backend, currentGemmBackend().c_str(), sizeof(decision.backend) - 1);
      if (bf16) std::strncpy(decision.bf16_backend, bf16GemmBackend().c_str(), sizeof(decision.bf16_backend) - 1);
      if (!kept.empty()) keepDecision(kept, gemmDecisionKey(o), decision);
      measured = true;
    } else if (world_->rank() == 0) {
      log << "GEMM: " << decision.backend << ", kept from the job's first run; peak "
          << std::lround(decision.peak_gflops) << " GFLOP/s\n";
    }
    waitOrThrow(world_->broadcast(&decision, &decision, sizeof(decision), mscUint8, 0), timeout_,
                "sharing rank 0's GEMM choice");
    if (!measured) {
      const int64_t m = o.batch_size * o.model.seq_len, n = 4 * o.model.d_model, k = o.model.d_model;
      selectGemmBackend(decision.backend, m, n, k, 0.0);
      if (bf16) selectBf16GemmBackend(decision.bf16_backend);
    }
    peak_ = decision.peak_gflops;
    backend_ = bf16 ? std::string("bf16-") + decision.bf16_backend : std::string(decision.backend);
  }

  TrainOptions options_;
  std::chrono::milliseconds timeout_{300000};
  std::shared_ptr<Communicator> world_;
  int hosts_ = 1, threads_ = 1;
  double peak_ = 0;
  std::string backend_;
  int64_t local_parameters_ = 0;
  int64_t steps_run_ = 0;
  std::vector<double> compute_s_;  // this rank's compute time per step (the heat map's row)

  // Rank 0 gathers every rank's row (each ran the same steps), writes the CSV and names the stragglers.
  void writeHeatmap() {
    const ProcessGroups& g = trainer_->groups();
    const auto n = static_cast<size_t>(world_->size());
    const size_t steps = compute_s_.size();
    std::vector<double> all(steps * n);
    const Status status = world_->allGather(compute_s_.data(), all.data(), steps, mscFloat64)->wait(timeout_);
    if (!status.isOk()) throw std::runtime_error("gathering the heat map: " + status.message());
    if (world_->rank() != 0) return;
    StragglerInput in;
    for (size_t r = 0; r < n; ++r) {
      in.compute_s.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(r * steps),
                                all.begin() + static_cast<std::ptrdiff_t>((r + 1) * steps));
      const auto c = g.layout.coordinatesOf(static_cast<int>(r));
      in.peer_group.push_back(c.pp());
      in.names.push_back("rank " + std::to_string(r) + " (" + g.layout.describe(c) + ")");
    }
    const std::string csv_path = options_.heatmap + ".csv", png_path = options_.heatmap + ".png";
    std::ofstream(csv_path) << heatmapCsv(in);
    plot::HeatMap map{"Compute time per step and rank (waits for communication taken out)", "step", "rank",
                      "compute per step (ms)", {}, {}};
    for (size_t r = 0; r < n; ++r) {
      map.rows.emplace_back();
      for (double s : in.compute_s[r]) map.rows.back().push_back(s * 1e3);
      map.row_names.push_back(std::to_string(r));
    }
    plot::writeHeatMap(png_path, map);
    const StragglerReport report = findStragglers(in);
    std::cout << "heat map: " << png_path << " and " << csv_path << " (" << n << " ranks x " << steps
              << " steps of compute time); slowest ranks against their pipeline stage:\n"
              << describeStragglers(in, report, 3);
  }
  std::unique_ptr<ParallelTrainer> trainer_;
  std::unique_ptr<ParallelCheckpointer> checkpointer_;
};

}  // namespace

std::unique_ptr<StepEngine> makeParallelEngine(const TrainOptions& o, std::shared_ptr<Communicator> world,
                                               int host_ranks, std::ostream& log) {
  return std::make_unique<ParallelEngine>(o, std::move(world), host_ranks, log);
}

}  // namespace megascale::trainer
