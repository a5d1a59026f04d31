// Everything megascale-train can be told, from flags and/or a config file. Each option is declared once in
// the table in train_options.cc (name, default, help), which drives parsing, --help and the config file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/model/model_config.h"
#include "trainer/optim/optimizer.h"

namespace megascale::trainer {

struct TrainOptions {
  TrainOptions() { model.vocab = 0; }  // the data's vocabulary unless told
  ModelConfig model;
  OptimizerConfig optimizer;
  int64_t batch_size = 8;
  int64_t steps = 300;
  double lr = 1e-3, min_lr = -1;  // min_lr < 0: lr / 10
  int64_t warmup = -1;            // < 0: steps / 10, at most 100
  std::string data;               // text file or token shard (.bin)
  std::string tokenizer = "bytes";  // "bytes", "bpe:N" (learn N tokens from the data), or a .bpe file
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;   // 0: only at the end (when a directory is given)
  int keep_checkpoints = 2;
  // Steps between checkpoints into host memory that the launcher keeps across restarts (megascale-run
  // --max-restarts offers it as MEGASCALE_MEMORY_CHECKPOINTS); 0: none. A restart resumes from the newest of
  // memory and checkpoint_dir.
  int64_t memory_checkpoint_every = 1;
  bool resume = true;             // continue from checkpoint_dir/latest when it exists
  int64_t stop_after = 0;         // > 0: stop after this many steps of this run (tests interruption)
  uint64_t seed = 1234;
  std::string precision = "fp32";
  std::string gemm = "auto";
  int threads = 0;                // 0: all online CPUs
  // The compute peak MFU is reported against (GFLOP/s, e.g. a GPU's datasheet figure); 0: measure this host's
  // GEMM peak at start (seconds of every core).
  double peak_gflops = 0;
  std::string summary_json, csv, plot;
  int64_t sample_tokens = 0;      // text generated after training, to eyeball the model
  int64_t log_every = 1;
  // Parallelism (under megascale-run -n N: data parallel D = N / (tp x pp)).
  int tp = 1, pp = 1, virtual_stages = 1, micro_batches = 1;
  std::string overlap = "tp,pp,dp";  // which communication overlaps compute: a subset of tp,pp,dp, or none
  int tp_chunks = 4;                 // pieces of each TP all-gather / reduce-scatter (with tp overlap)
  // Extra forwards in flight per downstream pipeline stage (eager 1F1B); -1 = 1 with pp overlap and plain
  // 1F1B, else 0.
  int pp_extra_warmup = -1;
  int micro_batch_group = 0;   // interleaved 1F1B: micro-batches per group through a chunk; 0 = pp
  int pp_traffic_class = -1;  // TOS byte of the pipeline links' sockets; -1 = the system default
  int64_t bucket_params = 1 << 18;   // parameters per DP gradient bucket (about a GEMM of the main job)
  std::string dp_comm_precision = "auto";  // fp32, bf16, or auto: bf16 with --precision bf16
  std::string pp_comm_precision = "auto";  // the same for the pipeline's activations and gradients
  std::string trace;                 // Chrome/Perfetto trace of every rank (written by world rank 0)
  int64_t trace_steps = 3;           // steps the trace keeps, from the second on
  std::string heatmap;               // PREFIX: PREFIX.png/.csv of every rank's compute time per step; stragglers named

  bool overlaps(const std::string& kind) const;
};

/// Parses argv (and --config FILE, whose "key = value" lines take the flag names without dashes; flags win).
/// Throws std::invalid_argument with the offending flag or line. Sets `help` for -h/--help.
TrainOptions parseTrainOptions(int argc, char** argv, bool& help);

std::string trainUsage();

/// The options in effect, one "name = value" per line (printed at start-up and loadable as --config).
std::string describeOptions(const TrainOptions& o);

}  // namespace megascale::trainer
