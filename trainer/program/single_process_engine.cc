// The whole model in one process: the oracle the parallel trainer is checked against.
#include <cmath>
#include <filesystem>

#include "trainer/checkpoint/sharded_checkpoint.h"
#include "trainer/kernels/gemm.h"
#include "trainer/kernels/gemm_bf16.h"
#include "trainer/model/gpt.h"
#include "trainer/optim/optimizer.h"
#include "trainer/program/gemm_setup.h"
#include "trainer/program/sampling.h"
#include "trainer/program/step_engine.h"

namespace megascale::trainer {

namespace {

class SingleProcessEngine final : public StepEngine {
 public:
  SingleProcessEngine(const TrainOptions& o, std::ostream& log)
      : bf16_(o.precision == "bf16"),
        peak_(chooseGemm(o, bf16_, log)),
        model_(o.model),
        optimizer_(o.optimizer, model_.parameterTable()),
        batch_(o.batch_size) {
    model_.initialize(o.seed);
    if (bf16_) model_.setPrecision(Precision::kBf16);
  }

  StepOutcome step(const Batch& batch, double lr, bool stop_vote) override {
    using Clock = Timeline::Clock;
    Timeline timeline;
    model_.zeroGradients();
    StepOutcome out;
    out.stop = stop_vote;
    const auto t0 = Clock::now();
    out.loss = model_.forward(batch.inputs.data(), batch.targets.data(), batch_);
    if (!std::isfinite(out.loss)) return out;
    const auto t1 = Clock::now();
    model_.backward();
    const auto t2 = Clock::now();
    out.grad_norm = clipGradientNorm(model_.gradients(), model_.parameterCount(), optimizer_.config().clip_norm);
    optimizer_.step(model_.parameters(), model_.gradients(), lr);
    timeline.computeSpan("forward", t0, t1, false);
    timeline.computeSpan("backward", t1, t2, true);
    timeline.optimizerSpan(t2, Clock::now());
    out.times = timeline.takeStep();
    return out;
  }

  int64_t parameterCount() const override { return model_.parameterCount(); }
  bool reports() const override { return true; }
  double peakGflops() const override { return peak_; }
  std::string gemmBackend() const override { return bf16_ ? "bf16-" + bf16GemmBackend() : currentGemmBackend(); }
  std::string describe() const override { return ""; }

  void save(const std::vector<CheckpointTarget>& targets, const TrainingState& state) override {
    for (const CheckpointTarget& t : targets) saveToDirectory(t.dir, t.keep, state, model_, optimizer_);
  }

  std::optional<TrainingState> restore(const CheckpointTarget& from, std::ostream& log) override {
    const std::string latest = latestCheckpoint(from.dir);
    if (latest.empty()) return std::nullopt;
    TrainingState state;
    if (std::filesystem::is_directory(latest)) {  // a parallel run's shards: assembled into the whole model
      const CheckpointReader reader(latest, model_.config(), optimizer_.config());
      reader.slice(model_.parameterTable(), model_.parameters(), optimizer_.firstMoment().data(),
                   optimizer_.secondMoment().data());
      optimizer_.setSteps(reader.optimizerSteps());
      state = reader.state();
    } else {
      state = loadCheckpoint(latest, model_, optimizer_);
    }
    model_.refreshRoundedWeights();
    log << "resumed from " << latest << " at step " << state.step << std::endl;
    return state;
  }

  std::string sample(const TrainingData& data, Random& random, int64_t count) override {
    return sampleText(model_, data, random, count);
  }

 private:
  bool bf16_;
  double peak_;
  Gpt<float> model_;
  Optimizer<float> optimizer_;
  int64_t batch_;
};

}  // namespace

std::unique_ptr<StepEngine> makeSingleProcessEngine(const TrainOptions& o, std::ostream& log) {
  return std::make_unique<SingleProcessEngine>(o, log);
}

}  // namespace megascale::trainer
