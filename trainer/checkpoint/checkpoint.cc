#include "trainer/checkpoint/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <stdexcept>

#include "trainer/io/atomic_file.h"
#include "trainer/io/checksum.h"
#include "trainer/io/file_header.h"

namespace megascale::trainer {

namespace {

constexpr char kMagic[8] = {'M', 'S', 'C', 'K', 'P', 'T', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = file_header::kBytes;

template <typename U>
void append(std::string& out, const U& value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(U));
}

void appendSection(std::string& out, const std::string& name, const void* data, uint64_t bytes) {
  append(out, static_cast<uint32_t>(name.size()));
  out += name;
  append(out, bytes);
  out.append(static_cast<const char*>(data), bytes);
}

template <typename T>
void appendVector(std::string& out, const std::string& name, const std::vector<T>& v) {
  appendSection(out, name, v.data(), v.size() * sizeof(T));
}

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
  std::string payload;
  const std::string shape = describeShape(model.config(), optimizer.config());
  appendSection(payload, "shape", shape.data(), shape.size());
  appendSection(payload, "step", &state.step, sizeof(state.step));
  appendSection(payload, "data_position", &state.data_position, sizeof(state.data_position));
  appendSection(payload, "rng", state.rng.data(), sizeof(state.rng));
  const int64_t optimizer_steps = optimizer.steps();
  appendSection(payload, "optimizer_steps", &optimizer_steps, sizeof(optimizer_steps));
  appendSection(payload, "params", model.parameters(), static_cast<uint64_t>(model.parameterCount()) * sizeof(float));
  appendVector(payload, "adam_m", optimizer.firstMoment());
  appendVector(payload, "adam_v", optimizer.secondMoment());

  std::string header = file_header::start(kMagic, kVersion);
  file_header::put(header, 16, static_cast<uint64_t>(payload.size()));
  file_header::put(header, 24, crc32c(0, payload.data(), payload.size()));
  file_header::seal(header);
  writeFileAtomically(path, header + payload);
}

TrainingState loadCheckpoint(const std::string& path, Gpt<float>& model, Optimizer<float>& optimizer) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open checkpoint " + path);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto bad = [&](const std::string& what) { return std::runtime_error("checkpoint " + path + ": " + what); };
  if (auto problem = file_header::problem(bytes, kMagic, kVersion, "megascale checkpoint"); !problem.empty()) {
    throw bad(problem);
  }
  const auto payload_bytes = file_header::get<uint64_t>(bytes, 16);
  const auto payload_crc = file_header::get<uint32_t>(bytes, 24);
  if (bytes.size() - kHeaderBytes != payload_bytes) {
    throw bad("truncated or padded: header says " + std::to_string(payload_bytes) + " payload bytes, file has " +
              std::to_string(bytes.size() - kHeaderBytes));
  }
  if (payload_crc != crc32c(0, bytes.data() + kHeaderBytes, payload_bytes)) throw bad("payload checksum mismatch (corrupted)");

  std::map<std::string, std::string_view> sections;
  size_t at = kHeaderBytes;
  while (at < bytes.size()) {
    uint32_t name_length;
    uint64_t length;
    if (bytes.size() - at < 4) throw bad("malformed section table");
    std::memcpy(&name_length, bytes.data() + at, 4);
    if (bytes.size() - at - 4 < name_length + 8ull) throw bad("malformed section table");
    std::string name(bytes.data() + at + 4, name_length);
    std::memcpy(&length, bytes.data() + at + 4 + name_length, 8);
    at += 12 + name_length;
    if (bytes.size() - at < length) throw bad("section '" + name + "' runs past the end");
    sections[name] = std::string_view(bytes.data() + at, length);
    at += length;
  }
  auto section = [&](const std::string& name, size_t expected_bytes) {
    auto it = sections.find(name);
    if (it == sections.end()) throw bad("missing section '" + name + "'");
    if (it->second.size() != expected_bytes) {
      throw bad("section '" + name + "' has " + std::to_string(it->second.size()) + " bytes, expected " +
                std::to_string(expected_bytes));
    }
    return it->second;
  };
  const std::string expected_shape = describeShape(model.config(), optimizer.config());
  auto shape_it = sections.find("shape");
  if (shape_it == sections.end()) throw bad("missing section 'shape'");
  if (shape_it->second != expected_shape) {
    std::string saved(shape_it->second);
    for (char& c : saved) c = c == '\n' ? ' ' : c;
    std::string wanted = expected_shape;
    for (char& c : wanted) c = c == '\n' ? ' ' : c;
    throw bad("saved for another model: {" + saved + "} but this run is {" + wanted + "}");
  }
  TrainingState state;
  const size_t param_bytes = static_cast<size_t>(model.parameterCount()) * sizeof(float);
  std::memcpy(&state.step, section("step", 8).data(), 8);
  std::memcpy(&state.data_position, section("data_position", 8).data(), 8);
  std::memcpy(state.rng.data(), section("rng", sizeof(state.rng)).data(), sizeof(state.rng));
  int64_t optimizer_steps;
  std::memcpy(&optimizer_steps, section("optimizer_steps", 8).data(), 8);
  std::memcpy(model.parameters(), section("params", param_bytes).data(), param_bytes);
  std::memcpy(optimizer.firstMoment().data(), section("adam_m", param_bytes).data(), param_bytes);
  std::memcpy(optimizer.secondMoment().data(), section("adam_v", param_bytes).data(), param_bytes);
  optimizer.setSteps(optimizer_steps);
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
