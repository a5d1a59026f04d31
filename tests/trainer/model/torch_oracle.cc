// Runs our model for torch_reference_test.py: writes the initial weights, the batch, the logits, the loss and
// every gradient (in T = double or float), then trains `steps` steps and writes the losses and final weights.
// Files are raw little-endian arrays plus manifest.json, which the Python side reads with numpy.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "trainer/model/gpt.h"
#include "trainer/optim/optimizer.h"

namespace megascale::trainer {
namespace {

std::map<std::string, std::string> parseFlags(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  return flags;
}

template <typename T>
void writeArray(const std::string& path, const T* data, int64_t count) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(count * sizeof(T)));
  if (!out) throw std::runtime_error("cannot write " + path);
}

template <typename T>
int run(std::map<std::string, std::string>& f) {
  ModelConfig c;
  c.layers = std::stoll(f["--layers"]);
  c.d_model = std::stoll(f["--d-model"]);
  c.heads = std::stoll(f["--heads"]);
  c.seq_len = std::stoll(f["--seq-len"]);
  c.vocab = std::stoll(f["--vocab"]);
  c.window = std::stoll(f["--window"]);
  c.block = parseBlockKind(f["--block"]);
  const int64_t batch = std::stoll(f["--batch"]), steps = std::stoll(f["--steps"]);
  const std::string dir = f["--out"];
  Gpt<T> model(c);
  model.initialize(std::stoull(f["--seed"]));
  // Scale the weights up so attention is far from uniform and GELU far from linear.
  const double spread = std::stod(f["--spread"]);
  for (int64_t i = 0; i < model.parameterCount(); ++i) model.parameters()[i] *= static_cast<T>(spread);

  const int64_t n = batch * c.seq_len;
  std::vector<int32_t> inputs(static_cast<size_t>(n)), targets(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    inputs[static_cast<size_t>(i)] = static_cast<int32_t>((i * 31 + 7) % c.vocab);
    targets[static_cast<size_t>(i)] = static_cast<int32_t>((i * 17 + i / 3) % c.vocab);
  }
  std::ostringstream manifest;
  manifest << "{\"params\": [";
  for (size_t i = 0; i < model.parameterTable().size(); ++i) {
    const ParamSpec& s = model.parameterTable()[i];
    writeArray(dir + "/init." + s.name, model.parameters() + s.offset, s.size());
    manifest << (i ? ", " : "") << "{\"name\": \"" << s.name << "\", \"decay\": " << (s.weight_decay ? 1 : 0)
             << ", \"shape\": [";
    for (size_t d = 0; d < s.shape.size(); ++d) manifest << (d ? ", " : "") << s.shape[d];
    manifest << "]}";
  }
  manifest << "]}";
  std::ofstream(dir + "/manifest.json") << manifest.str();
  writeArray(dir + "/inputs", inputs.data(), n);
  writeArray(dir + "/targets", targets.data(), n);

  model.zeroGradients();
  T loss = model.forward(inputs.data(), targets.data(), batch);
  model.backward();
  writeArray(dir + "/loss", &loss, 1);
  writeArray(dir + "/logits", model.logits(), n * c.vocab);
  for (const ParamSpec& s : model.parameterTable()) {
    writeArray(dir + "/grad." + s.name, model.gradients() + s.offset, s.size());
  }

  OptimizerConfig oc;
  oc.kind = parseOptimizerKind(f["--optimizer"]);
  oc.weight_decay = std::stod(f["--weight-decay"]);
  oc.clip_norm = std::stod(f["--clip"]);
  LrSchedule schedule{std::stod(f["--lr"]), std::stod(f["--lr"]) / 10, 2, steps};
  Optimizer<T> optimizer(oc, model.parameterTable());
  std::vector<T> losses;
  for (int64_t step = 0; step < steps; ++step) {
    model.zeroGradients();
    losses.push_back(model.forward(inputs.data(), targets.data(), batch));
    model.backward();
    clipGradientNorm(model.gradients(), model.parameterCount(), oc.clip_norm);
    optimizer.step(model.parameters(), model.gradients(), schedule.at(step));
  }
  writeArray(dir + "/losses", losses.data(), static_cast<int64_t>(losses.size()));
  for (const ParamSpec& s : model.parameterTable()) {
    writeArray(dir + "/final." + s.name, model.parameters() + s.offset, s.size());
  }
  return 0;
}

}  // namespace
}  // namespace megascale::trainer

int main(int argc, char** argv) {
  auto flags = megascale::trainer::parseFlags(argc, argv);
  try {
    return flags["--precision"] == "f64" ? megascale::trainer::run<double>(flags)
                                         : megascale::trainer::run<float>(flags);
  } catch (const std::exception& e) {
    std::cerr << "torch_oracle: " << e.what() << "\n";
    return 1;
  }
}
