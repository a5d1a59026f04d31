#include "trainer/checkpoint/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>

#include "trainer/io/atomic_file.h"
#include "trainer/io/section_file.h"

namespace megascale::trainer {

namespace {

constexpr char kMagic[8] = {'M', 'S', 'C', 'K', 'P', 'T', '0', '1'};
constexpr uint32_t kVersion = 1;

}  // namespace

std::string describeShape(const ModelConfig& m, const OptimizerConfig& o) {
  std::ostringstream s;
  s << "layers=" << m.layers << "\nd_model=" << m.d_model << "\nheads=" << m.heads << "\nseq_len=" << m.seq_len
    << "\nvocab=" << m.vocab << "\nwindow=" << m.effectiveWindow() << "\nblock=" << blockKindName(m.block)
    << "\noptimizer=" << optimizerKindName(o.kind) << "\n";
  return s.str();
}

void saveCheckpoint(const std::string& path, const TrainingState& state, const Gpt<float>& model,
                    Optimizer<float>& optimizer) {
  SectionWriter out;
  addCheckpointHeader(out, describeShape(model.config(), optimizer.config()), state, optimizer.steps());
  out.add("params", model.parameters(), static_cast<uint64_t>(model.parameterCount()) * sizeof(float));
  out.addVector("adam_m", optimizer.firstMoment());
  out.addVector("adam_v", optimizer.secondMoment());
  out.write(path, kMagic, kVersion);
}

void addCheckpointHeader(SectionWriter& out, const std::string& shape, const TrainingState& state,
                         int64_t optimizer_steps) {
  out.add("shape", shape.data(), shape.size());
  out.addValue("step", state.step);
  out.addValue("data_position", state.data_position);
  out.add("rng", state.rng.data(), sizeof(state.rng));
  out.addValue("optimizer_steps", optimizer_steps);
}

std::string shapeMismatch(std::string_view saved_shape, const std::string& expected_shape) {
  if (saved_shape == expected_shape) return "";
  std::string saved(saved_shape), wanted = expected_shape;
  for (char& c : saved) c = c == '\n' ? ' ' : c;
  for (char& c : wanted) c = c == '\n' ? ' ' : c;
  return "saved for another model: {" + saved + "} but this run is {" + wanted + "}";
}

void checkShape(const SectionFile& file, const std::string& expected_shape) {
  const std::string mismatch = shapeMismatch(file.section("shape"), expected_shape);
  if (!mismatch.empty()) throw file.error(mismatch);
}

TrainingState readTrainingState(const SectionFile& file) {
  TrainingState state;
  state.step = file.value<int64_t>("step");
  state.data_position = file.value<int64_t>("data_position");
  std::memcpy(state.rng.data(), file.section("rng", sizeof(state.rng)).data(), sizeof(state.rng));
  return state;
}

TrainingState loadCheckpoint(const std::string& path, Gpt<float>& model, Optimizer<float>& optimizer) {
  const SectionFile file(path, kMagic, kVersion, "megascale checkpoint");
  checkShape(file, describeShape(model.config(), optimizer.config()));
  const TrainingState state = readTrainingState(file);
  const size_t param_bytes = static_cast<size_t>(model.parameterCount()) * sizeof(float);
  std::memcpy(model.parameters(), file.section("params", param_bytes).data(), param_bytes);
  std::memcpy(optimizer.firstMoment().data(), file.section("adam_m", param_bytes).data(), param_bytes);
  std::memcpy(optimizer.secondMoment().data(), file.section("adam_v", param_bytes).data(), param_bytes);
  optimizer.setSteps(file.value<int64_t>("optimizer_steps"));
  return state;
}

std::string checkpointPath(const std::string& dir, int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%08lld.ckpt", static_cast<long long>(step));
  return dir + "/" + name;
}

std::string latestCheckpoint(const std::string& dir) {
  std::ifstream in(dir + "/latest");
  std::string name;
  if (!in || !std::getline(in, name) || name.empty()) return "";
  return dir + "/" + name;
}

int64_t latestStep(const std::string& dir) {
  const std::string latest = latestCheckpoint(dir);
  const size_t at = latest.rfind("/step_");
  if (at == std::string::npos) return -1;
  return std::atoll(latest.c_str() + at + 6);
}

void saveToDirectory(const std::string& dir, int keep, const TrainingState& state, const Gpt<float>& model,
                     Optimizer<float>& optimizer) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create checkpoint directory " + dir + ": " + ec.message());
  const std::string path = checkpointPath(dir, state.step);
  saveCheckpoint(path, state, model, optimizer);
  writeFileAtomically(dir + "/latest", std::filesystem::path(path).filename().string() + "\n");
  std::vector<std::string> existing;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) == 0 && name.size() == 18 && name.ends_with(".ckpt")) existing.push_back(entry.path());
  }
  std::sort(existing.begin(), existing.end());
  for (size_t i = 0; i + static_cast<size_t>(std::max(keep, 1)) < existing.size(); ++i) {
    std::filesystem::remove(existing[i], ec);
  }
}

}  // namespace megascale::trainer
