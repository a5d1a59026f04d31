#include "trainer/program/train_options.h"

#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace megascale::trainer {

namespace {

struct Option {
  const char* name;
  const char* help;
  std::function<void(TrainOptions&, const std::string&)> set;
  std::function<std::string(const TrainOptions&)> get;
};

int64_t toInt(const std::string& name, const std::string& v) {
  size_t used = 0;
  int64_t x = 0;
  try {
    x = std::stoll(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::invalid_argument("--" + name + " expects an integer, not '" + v + "'");
  return x;
}

double toDouble(const std::string& name, const std::string& v) {
  size_t used = 0;
  double x = 0;
  try {
    x = std::stod(v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != v.size() || v.empty()) throw std::invalid_argument("--" + name + " expects a number, not '" + v + "'");
  return x;
}

std::string str(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

#define INT_OPTION(NAME, FIELD, HELP)                                                                   \
  Option {                                                                                              \
    NAME, HELP, [](TrainOptions& o, const std::string& v) { o.FIELD = toInt(NAME, v); },                \
        [](const TrainOptions& o) { return std::to_string(o.FIELD); }                                   \
  }
#define REAL_OPTION(NAME, FIELD, HELP)                                                                  \
  Option {                                                                                              \
    NAME, HELP, [](TrainOptions& o, const std::string& v) { o.FIELD = toDouble(NAME, v); },             \
        [](const TrainOptions& o) { return str(o.FIELD); }                                              \
  }
#define TEXT_OPTION(NAME, FIELD, HELP)                                                                  \
  Option {                                                                                              \
    NAME, HELP, [](TrainOptions& o, const std::string& v) { o.FIELD = v; },                             \
        [](const TrainOptions& o) { return o.FIELD; }                                                   \
  }

const std::vector<Option>& options() {
  static const std::vector<Option> table = {
      INT_OPTION("layers", model.layers, "transformer layers"),
      INT_OPTION("d-model", model.d_model, "hidden size"),
      INT_OPTION("heads", model.heads, "attention heads (must divide d-model)"),
      INT_OPTION("seq-len", model.seq_len, "tokens per sequence"),
      INT_OPTION("vocab", model.vocab, "vocabulary size; 0 = the tokenizer's"),
      INT_OPTION("window", model.window, "sliding attention window; 0 = full causal"),
      Option{"block", "parallel (y = x + Attn(LN x) + MLP(LN x)) or serial",
             [](TrainOptions& o, const std::string& v) { o.model.block = parseBlockKind(v); },
             [](const TrainOptions& o) { return std::string(blockKindName(o.model.block)); }},
      INT_OPTION("batch-size", batch_size, "sequences per step"),
      INT_OPTION("steps", steps, "optimizer steps in total"),
      Option{"optimizer", "adamw or lamb",
             [](TrainOptions& o, const std::string& v) { o.optimizer.kind = parseOptimizerKind(v); },
             [](const TrainOptions& o) { return std::string(optimizerKindName(o.optimizer.kind)); }},
      REAL_OPTION("lr", lr, "peak learning rate"),
      REAL_OPTION("min-lr", min_lr, "final learning rate of the cosine; < 0 = lr/10"),
      INT_OPTION("warmup", warmup, "linear warmup steps; < 0 = steps/10 (at most 100)"),
      REAL_OPTION("weight-decay", optimizer.weight_decay, "decoupled weight decay (matrices, embeddings)"),
      REAL_OPTION("beta1", optimizer.beta1, "Adam beta1"),
      REAL_OPTION("beta2", optimizer.beta2, "Adam beta2"),
      REAL_OPTION("clip", optimizer.clip_norm, "global gradient-norm clip; 0 = off"),
      TEXT_OPTION("data", data, "training text (plain or .gz), or a token shard (.bin)"),
      TEXT_OPTION("tokenizer", tokenizer, "bytes | bpe:N (learn N tokens from the data) | FILE.bpe"),
      TEXT_OPTION("checkpoint-dir", checkpoint_dir, "where checkpoints go; a run resumes from its latest"),
      INT_OPTION("checkpoint-every", checkpoint_every, "steps between checkpoints; 0 = at the end only"),
      INT_OPTION("keep-checkpoints", keep_checkpoints, "how many checkpoints to keep"),
      INT_OPTION("memory-checkpoint-every", memory_checkpoint_every,
                 "steps between checkpoints into host memory that megascale-run --max-restarts keeps; 0 = none"),
      Option{"resume", "1 = continue from checkpoint-dir/latest when present, 0 = start over",
             [](TrainOptions& o, const std::string& v) { o.resume = toInt("resume", v) != 0; },
             [](const TrainOptions& o) { return std::string(o.resume ? "1" : "0"); }},
      INT_OPTION("stop-after", stop_after, "leave after this many steps of this run (0 = run to --steps)"),
      INT_OPTION("seed", seed, "initialization and sampling seed"),
      TEXT_OPTION("precision", precision, "fp32 or bf16 (bf16 GEMMs, fp32 master weights)"),
      TEXT_OPTION("gemm", gemm, "GEMM backend: auto (measure and keep the fastest) or a name from --gemm list"),
      INT_OPTION("threads", threads, "compute threads; 0 = all online CPUs"),
      REAL_OPTION("peak-gflops", peak_gflops,
                  "compute peak that MFU is reported against, GFLOP/s; 0 = measure this host's GEMM peak"),
      TEXT_OPTION("summary-json", summary_json, "write the run's summary (tokens_per_s, mfu, losses) here"),
      TEXT_OPTION("csv", csv, "write one row per step here"),
      TEXT_OPTION("plot", plot, "write the loss curve here (PNG)"),
      INT_OPTION("sample-tokens", sample_tokens, "generate this many tokens after training"),
      INT_OPTION("log-every", log_every, "steps between progress lines"),
      INT_OPTION("tp", tp, "tensor-parallel ranks (sequence parallel; a TP group stays on one host)"),
      INT_OPTION("pp", pp, "pipeline stages"),
      INT_OPTION("virtual-stages", virtual_stages, "model chunks per pipeline rank (interleaved 1F1B when > 1)"),
      INT_OPTION("micro-batches", micro_batches, "micro-batches per step and data-parallel rank"),
      TEXT_OPTION("overlap", overlap, "communication overlapped with compute: any of tp,pp,dp, or none"),
      INT_OPTION("pp-extra-warmup", pp_extra_warmup,
                 "extra forwards in flight per downstream stage to hide transfer latency; -1 = auto"),
      INT_OPTION("microbatch-group-size", micro_batch_group,
                 "interleaved 1F1B: micro-batches that run through a chunk before the next; 0 = --pp"),
      INT_OPTION("pp-traffic-class", pp_traffic_class,
                 "IP TOS byte (DSCP << 2) of pipeline traffic, for switches with priority queues; -1 = default"),
      INT_OPTION("tp-chunks", tp_chunks, "pieces each TP all-gather / reduce-scatter is cut into"),
      INT_OPTION("bucket-params", bucket_params, "parameters per data-parallel gradient bucket"),
      TEXT_OPTION("dp-comm-precision", dp_comm_precision,
                  "data-parallel gradients and parameters on the wire: fp32, bf16, or auto (bf16 with --precision bf16)"),
      TEXT_OPTION("pp-comm-precision", pp_comm_precision,
                  "pipeline activations and gradients on the wire: fp32, bf16, or auto (bf16 with --precision bf16)"),
      TEXT_OPTION("trace", trace, "write a Chrome/Perfetto trace of every rank here"),
      INT_OPTION("trace-steps", trace_steps, "steps the trace keeps (from the second step on)"),
      TEXT_OPTION("heatmap", heatmap,
                  "PREFIX: write PREFIX.png and PREFIX.csv (every rank's compute time per step, waits taken out) and "
                  "name the ranks slower than the others of their pipeline stage"),
  };
  return table;
}

const Option& find(const std::string& name) {
  for (const auto& o : options()) {
    if (name == o.name) return o;
  }
  throw std::invalid_argument("unknown option '" + name + "' (megascale-train --help lists them)");
}

std::string normalize(std::string key) {
  for (char& c : key) c = c == '_' ? '-' : c;
  return key;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

void loadConfigFile(const std::string& path, std::map<std::string, std::string>& values) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read config file " + path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw std::invalid_argument(path + ":" + std::to_string(n) + ": expected 'key = value'");
    const std::string key = normalize(trim(line.substr(0, eq)));
    find(key);  // unknown keys are errors, with the file position
    values[key] = trim(line.substr(eq + 1));
  }
}

}  // namespace

TrainOptions parseTrainOptions(int argc, char** argv, bool& help) {
  help = false;
  std::map<std::string, std::string> from_file, from_flags;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      return {};
    }
    if (arg.rfind("--", 0) != 0) throw std::invalid_argument("unexpected argument '" + arg + "'");
    std::string name = arg.substr(2), value;
    const auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else {
      if (i + 1 >= argc) throw std::invalid_argument("--" + name + " needs a value");
      value = argv[++i];
    }
    name = normalize(name);
    if (name == "config") {
      loadConfigFile(value, from_file);
      continue;
    }
    find(name);
    from_flags[name] = value;
  }
  TrainOptions o;
  for (const auto* source : {&from_file, &from_flags}) {
    for (const auto& [name, value] : *source) find(name).set(o, value);
  }
  if (o.batch_size < 1) throw std::invalid_argument("--batch-size must be at least 1");
  if (o.steps < 1) throw std::invalid_argument("--steps must be at least 1");
  if (!(o.lr > 0)) throw std::invalid_argument("--lr must be positive");
  if (o.precision != "fp32" && o.precision != "bf16") throw std::invalid_argument("--precision must be fp32 or bf16");
  if (o.threads < 0) throw std::invalid_argument("--threads must be >= 0");
  if (!(o.peak_gflops >= 0)) throw std::invalid_argument("--peak-gflops must be >= 0 (0 = measure)");
  if (o.log_every < 1) throw std::invalid_argument("--log-every must be at least 1");
  if (o.checkpoint_every < 0 || o.memory_checkpoint_every < 0) {
    throw std::invalid_argument("--checkpoint-every and --memory-checkpoint-every must be >= 0");
  }
  if (o.tp < 1 || o.pp < 1 || o.virtual_stages < 1 || o.micro_batches < 1) {
    throw std::invalid_argument("--tp, --pp, --virtual-stages and --micro-batches must be at least 1");
  }
  if (o.pp_traffic_class < -1 || o.pp_traffic_class > 255) {
    throw std::invalid_argument("--pp-traffic-class must be a TOS byte (0-255) or -1 (got " +
                                std::to_string(o.pp_traffic_class) + ")");
  }
  if (o.pp_extra_warmup < -1) throw std::invalid_argument("--pp-extra-warmup must be -1 (auto) or at least 0");
  if (o.pp_extra_warmup == -1) o.pp_extra_warmup = o.overlaps("pp") && o.virtual_stages == 1 ? 1 : 0;
  if (o.pp_extra_warmup > 0 && !o.overlaps("pp")) {
    // Without pp overlap a send waits where it is issued, for a receive the peer posts only later.
    throw std::invalid_argument("--pp-extra-warmup needs pp in --overlap");
  }
  if (o.tp_chunks < 1) throw std::invalid_argument("--tp-chunks must be at least 1");
  if (o.bucket_params < 1) throw std::invalid_argument("--bucket-params must be at least 1");
  for (auto [value, flag] : {std::pair{&o.dp_comm_precision, "--dp-comm-precision"},
                              std::pair{&o.pp_comm_precision, "--pp-comm-precision"}}) {
    if (*value == "auto") *value = o.precision;
    if (*value != "fp32" && *value != "bf16") {
      throw std::invalid_argument(std::string(flag) + " must be fp32, bf16 or auto (got '" + *value + "')");
    }
  }
  if (o.overlap != "none") {
    std::stringstream list(o.overlap);
    for (std::string kind; std::getline(list, kind, ',');) {
      if (kind != "tp" && kind != "pp" && kind != "dp") {
        throw std::invalid_argument("--overlap takes tp, pp, dp (comma-separated) or none, not '" + kind + "'");
      }
    }
  }
  if (o.min_lr < 0) o.min_lr = o.lr / 10;
  if (o.warmup < 0) o.warmup = std::min<int64_t>(100, o.steps / 10);
  return o;
}

bool TrainOptions::overlaps(const std::string& kind) const {
  std::stringstream list(overlap);
  for (std::string item; std::getline(list, item, ',');) {
    if (item == kind) return true;
  }
  return false;
}

std::string trainUsage() {
  std::ostringstream s;
  s << "usage: megascale-train [--config FILE] [--NAME VALUE ...]\n"
       "Trains a GPT on the CPU. Config files hold 'name = value' lines; flags override them.\n\n";
  TrainOptions defaults;
  for (const auto& o : options()) {
    std::string flag = std::string("--") + o.name;
    flag.resize(std::max<size_t>(flag.size(), 20), ' ');
    s << "  " << flag << o.help << " [" << o.get(defaults) << "]\n";
  }
  return s.str();
}

std::string describeOptions(const TrainOptions& o) {
  std::ostringstream s;
  for (const auto& option : options()) s << option.name << " = " << option.get(o) << "\n";
  return s.str();
}

}  // namespace megascale::trainer
