#include "trainer/checkpoint/sharded_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "trainer/io/atomic_file.h"
#include "trainer/io/section_file.h"

namespace megascale::trainer {

namespace {

constexpr char kShardMagic[8] = {'M', 'S', 'S', 'H', 'A', 'R', 'D', '1'};
constexpr char kWholeMagic[8] = {'M', 'S', 'C', 'K', 'P', 'T', '0', '1'};
constexpr uint32_t kVersion = 1;

// Layout section: shard_dim, shard_index, shard_count, blocks, then the global shape.
std::vector<int64_t> encodeLayout(const ParamSpec& spec) {
  std::vector<int64_t> out{spec.layout.shard_dim, spec.layout.shard_index, spec.layout.shard_count,
                           spec.layout.blocks};
  out.insert(out.end(), spec.global_shape.begin(), spec.global_shape.end());
  return out;
}

}  // namespace

struct CheckpointReader::Part {
  ParamSpec spec;  // as saved: local shape, layout (offset 0)
  const float* param;
  const float* m;
  const float* v;
};

std::string shardedCheckpointDir(const std::string& dir, int64_t step) {
  const std::string file = checkpointPath(dir, step);  // dir/step_N.ckpt
  return file.substr(0, file.size() - 5);
}

std::string shardFileName(int tp_rank, int pp_rank) {
  return "shard_tp" + std::to_string(tp_rank) + "_pp" + std::to_string(pp_rank) + ".ckpt";
}

void writeShard(const std::string& path, const ShardSnapshot& s) {
  SectionWriter out;
  addCheckpointHeader(out, s.shape, s.state, s.optimizer_steps);
  for (const auto& t : s.tensors) {
    const std::string key = "tensor:" + t.spec.name + ":";
    out.addVector(key + "layout", encodeLayout(t.spec));
    out.addVector(key + "param", t.param);
    out.addVector(key + "m", t.m);
    out.addVector(key + "v", t.v);
  }
  out.write(path, kShardMagic, kVersion);
}

void publishCheckpoint(const std::string& dir, const std::string& name, int keep) {
  writeFileAtomically(dir + "/latest", name + "\n");
  std::error_code ec;
  std::vector<std::string> existing;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = entry.path().filename().string();
    if (n.rfind("step_", 0) == 0 && (n.size() == 13 || (n.size() == 18 && n.ends_with(".ckpt")))) {
      existing.push_back(n.substr(0, 13) + (entry.is_directory() ? "/" : ".ckpt"));
    }
  }
  std::sort(existing.begin(), existing.end());
  for (size_t i = 0; i + static_cast<size_t>(std::max(keep, 1)) < existing.size(); ++i) {
    std::string victim = existing[i];
    if (victim.ends_with("/")) victim.pop_back();
    std::filesystem::remove_all(dir + "/" + victim, ec);
  }
}

CheckpointReader::CheckpointReader(const std::string& path, const ModelConfig& model, const OptimizerConfig& optimizer)
    : path_(path) {
  const std::string shape = describeShape(model, optimizer);
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    // One process's checkpoint: flat buffers laid out by the whole model's table.
    files_.push_back(std::make_unique<SectionFile>(path, kWholeMagic, kVersion, "megascale checkpoint"));
    const SectionFile& f = *files_.back();
    checkShape(f, shape);
    state_ = readTrainingState(f);
    optimizer_steps_ = f.value<int64_t>("optimizer_steps");
    const auto table = buildParameterTable(model, {});
    const size_t bytes = static_cast<size_t>(parameterCount(table)) * sizeof(float);
    const auto* p = reinterpret_cast<const float*>(f.section("params", bytes).data());
    const auto* m = reinterpret_cast<const float*>(f.section("adam_m", bytes).data());
    const auto* v = reinterpret_cast<const float*>(f.section("adam_v", bytes).data());
    for (const auto& spec : table) parts_.emplace(spec.name, Part{spec, p + spec.offset, m + spec.offset, v + spec.offset});
    return;
  }
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    const std::string n = entry.path().filename().string();
    if (n.rfind("shard_", 0) == 0 && n.ends_with(".ckpt")) names.push_back(entry.path().string());
  }
  if (names.empty()) throw std::runtime_error("checkpoint " + path + ": no shard files");
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    files_.push_back(std::make_unique<SectionFile>(name, kShardMagic, kVersion, "megascale checkpoint shard"));
    const SectionFile& f = *files_.back();
    checkShape(f, shape);
    state_ = readTrainingState(f);
    optimizer_steps_ = f.value<int64_t>("optimizer_steps");
    for (const std::string& section : f.names()) {
      if (section.rfind("tensor:", 0) != 0 || !section.ends_with(":layout")) continue;
      const std::string tensor = section.substr(7, section.size() - 7 - 7);
      const std::string_view raw = f.section(section);
      if (raw.size() % 8 != 0 || raw.size() < 5 * 8) throw f.error("malformed layout of tensor " + tensor);
      std::vector<int64_t> layout(raw.size() / 8);
      std::memcpy(layout.data(), raw.data(), raw.size());
      Part part{};
      part.spec.name = tensor;
      part.spec.layout = ShardLayout{static_cast<int>(layout[0]), static_cast<int>(layout[1]), static_cast<int>(layout[2]),
                                     static_cast<int>(layout[3])};
      part.spec.global_shape.assign(layout.begin() + 4, layout.end());
      part.spec.shape = part.spec.global_shape;
      if (part.spec.layout.shard_dim >= 0) {
        const auto dim = static_cast<size_t>(part.spec.layout.shard_dim);
        if (dim >= part.spec.shape.size() || part.spec.layout.shard_count < 1) {
          throw f.error("malformed layout of tensor " + tensor);
        }
        part.spec.shape[dim] /= part.spec.layout.shard_count;
      }
      const size_t bytes = static_cast<size_t>(part.spec.size()) * sizeof(float);
      const std::string key = "tensor:" + tensor + ":";
      part.param = reinterpret_cast<const float*>(f.section(key + "param", bytes).data());
      part.m = reinterpret_cast<const float*>(f.section(key + "m", bytes).data());
      part.v = reinterpret_cast<const float*>(f.section(key + "v", bytes).data());
      parts_.emplace(tensor, part);
    }
  }
}

CheckpointReader::~CheckpointReader() = default;

void CheckpointReader::wholeTensor(const ParamSpec& spec, std::vector<float>& param, std::vector<float>& m,
                                   std::vector<float>& v) const {
  const auto size = static_cast<size_t>(globalSize(spec));
  param.assign(size, 0.0f);
  m.assign(size, 0.0f);
  v.assign(size, 0.0f);
  auto [first, end] = parts_.equal_range(spec.name);
  if (first == end) throw std::runtime_error("checkpoint " + path_ + " has no tensor " + spec.name);
  std::vector<bool> have;
  for (auto it = first; it != end; ++it) {
    const Part& part = it->second;
    if (part.spec.global_shape != spec.global_shape) {
      throw std::runtime_error("checkpoint " + path_ + ": tensor " + spec.name + " has another shape");
    }
    const int count = std::max(1, part.spec.layout.shard_dim < 0 ? 1 : part.spec.layout.shard_count);
    if (have.empty()) have.assign(static_cast<size_t>(count), false);
    if (static_cast<int>(have.size()) != count) {
      throw std::runtime_error("checkpoint " + path_ + ": tensor " + spec.name + " is cut two ways");
    }
    const int index = part.spec.layout.shard_dim < 0 ? 0 : part.spec.layout.shard_index;
    if (index < 0 || index >= count || have[static_cast<size_t>(index)]) continue;
    have[static_cast<size_t>(index)] = true;
    copyShardToGlobal(part.spec, part.param, param.data());
    copyShardToGlobal(part.spec, part.m, m.data());
    copyShardToGlobal(part.spec, part.v, v.data());
  }
  for (size_t i = 0; i < have.size(); ++i) {
    if (!have[i]) {
      throw std::runtime_error("checkpoint " + path_ + " lacks part " + std::to_string(i) + " of " +
                               std::to_string(have.size()) + " of tensor " + spec.name);
    }
  }
}

void CheckpointReader::slice(const std::vector<ParamSpec>& table, float* param, float* m, float* v) const {
  std::vector<float> whole_p, whole_m, whole_v;
  for (const auto& spec : table) {
    wholeTensor(spec, whole_p, whole_m, whole_v);
    copyShardFromGlobal(spec, whole_p.data(), param + spec.offset);
    copyShardFromGlobal(spec, whole_m.data(), m + spec.offset);
    copyShardFromGlobal(spec, whole_v.data(), v + spec.offset);
  }
}

}  // namespace megascale::trainer
