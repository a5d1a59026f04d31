// Data parallelism with ZeRO-2 (Rajbhandari et al.; Megatron-LM's distributed optimizer): gradients are
// reduce-scattered in buckets while backward still runs, each data-parallel rank keeps fp32 master weights and
// optimizer moments for its 1/D of every bucket only, updates them, and the new parameters are all-gathered
// back, each bucket waited for only when a forward first reads it (so the gathers of later layers move while
// earlier layers compute).
//
// A bucket is a run of parameter ranges of one model chunk in the order backward finishes them (head first,
// embedding last), packed into one buffer padded to a multiple of D: the reduce-scatter and the all-gather both
// run in place on it. Tensors the TP ranks hold whole (LayerNorms, row-parallel biases, embeddings) get their
// gradients summed over the TP group on the shard. The tied embedding (wte on the first and the last pipeline
// stage) has a bucket of its own, laid out alike on both stages: it is reduce-scattered over DP like any
// other as soon as its gradient is final, and then its shard is summed over the two stages (the embedding
// group), so no other bucket waits for the first stage's last backward, and the sum between the stages moves
// 1/D of the bytes. Global-norm clipping and LAMB's per-tensor norms are sums over all shards: small
// all-reduces.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "trainer/model/gpt.h"
#include "trainer/monitor/timeline.h"
#include "trainer/optim/optimizer.h"
#include "trainer/parallel/process_groups.h"

namespace megascale::trainer {

struct ZeroOptions {
  OptimizerConfig optimizer;
  int64_t bucket_elements = 1 << 20;  // a bucket closes once it holds this many parameters
  bool overlap = true;                // reduce-scatter during backward, all-gather ahead of forward
  // Gradients reduce-scattered and parameters all-gathered in bf16 (half the bytes; Megatron's default in bf16
  // training). Every rank then computes with the bf16 values of the fp32 master weights, which stay exact on
  // their owner; with D = 1 nothing is rounded.
  bool bf16_communication = false;
  std::chrono::milliseconds timeout{300000};
};

class ZeroOptimizer {
 public:
  /// chunks: this rank's model chunks in chunk order, initialized alike on every DP rank. Sets their
  /// parameter hooks. Collective-free.
  ZeroOptimizer(const ZeroOptions& options, std::vector<Gpt<float>*> chunks, const ProcessGroups& groups);
  ZeroOptimizer(const ZeroOptimizer&) = delete;
  ZeroOptimizer& operator=(const ZeroOptimizer&) = delete;
  ~ZeroOptimizer();

  /// The next backward is the step's last one for its chunk: its finished gradient ranges start moving.
  void setFinalBackward(bool final) { final_backward_ = final; }

  /// After the step's last backward: finishes the gradient reduction, clips by the global norm, updates this
  /// rank's shards and starts the parameter all-gathers. Returns the gradient norm before clipping.
  double step(double lr);
  /// Waits for every parameter all-gather, so the chunks hold the newest parameters (checkpoints, sampling).
  void synchronizeParameters();
  /// The master weights and moments again from the chunks' parameters and the given moments (a restore).
  void reloadMasterWeights();

  /// Collective over the DP group: the Adam moments of every chunk as whole chunk-flat arrays (laid out like
  /// the chunk's parameter buffer), assembled from every DP rank's shards.
  void gatherMoments(std::vector<std::vector<float>>& m, std::vector<std::vector<float>>& v);
  /// Collective over the DP group: the fp32 master weights as whole chunk-flat arrays (what a checkpoint keeps:
  /// with bf16 communication the chunks hold their bf16 values).
  void gatherMasterWeights(std::vector<std::vector<float>>& params);
  /// Takes this rank's shards of chunk-flat moments (a restore; every DP rank passes the same arrays).
  void setMoments(const std::vector<std::vector<float>>& m, const std::vector<std::vector<float>>& v);

  /// This rank's own optimizer state, its shards' master weights and moments (what a checkpoint of this rank
  /// alone keeps), as views in place: shardStateElements() floats in all. No communication; valid until the
  /// next step().
  int64_t shardStateElements() const;
  std::vector<std::string_view> shardStateViews() const;
  /// Takes back what copyShardState gave on this rank of the same layout, and rebuilds the parameters from the
  /// master weights as a step does (so they come back bit for bit). Collective over the DP group.
  void restoreShardState(const float* in);

  int64_t steps() const { return steps_; }
  void setSteps(int64_t steps) { steps_ = steps; }
  int64_t optimizerStateBytes() const;  // Adam moments of this rank's shards
  int64_t masterWeightBytes() const;    // fp32 master weights of this rank's shards
  int bucketCount() const { return static_cast<int>(buckets_.size()); }
  /// The order step() updates buckets and starts their all-gathers: the next forward's reading order.
  const std::vector<size_t>& gatherOrder() const { return forward_order_; }
  /// The model chunk bucket i belongs to.
  int bucketChunk(size_t i) const { return buckets_.at(i).chunk; }

  /// Where waits and collectives are timed (may be null).
  void setTimeline(Timeline* timeline) { timeline_ = timeline; }

 private:
  struct Range {
    int64_t begin, end, packed;  // in the chunk's flat buffer; where it starts in the bucket
  };
  struct TensorPiece {
    int tensor;             // index over all chunks' tables
    int64_t shard_offset;   // in this rank's shard of the bucket
    int64_t param_offset;   // in the chunk's flat buffer
    int64_t length;
    bool decay;
    bool replicated;        // every TP rank holds the whole tensor
    bool counted;           // in the global norm (one copy of each replicated or tied tensor)
  };
  struct Bucket {
    int chunk = 0;
    std::vector<Range> ranges;
    int64_t elements = 0, shard = 0;
    std::vector<float> buffer;  // [shard x D]: packed gradients, later parameters; [shard] with bf16 traffic
    std::vector<float> master, m, v;
    std::vector<uint16_t> half;  // [shard x D] bf16: the buffer that moves with bf16 communication
    std::vector<TensorPiece> pieces;
    int pending = 0;            // ranges whose gradients are not final yet this step
    bool tied_embedding = false;  // holds this stage's copy of wte, and nothing else
    bool reducing = false;
    std::shared_ptr<Work> tied, reduce, gather;  // tied: the embedding-group all-reduce of the wte shard
    std::chrono::steady_clock::time_point reduce_issued, gather_issued, tied_issued;
  };

  void rangeDone(int chunk, Gpt<float>::ParamRange range);
  void ensureParameters(int chunk, Gpt<float>::ParamRange range);
  void launchReduce(Bucket& b);
  /// Puts the bucket's master weights into its shard and starts their all-gather to every DP rank.
  void startGather(Bucket& b);
  /// Waits for bucket i's reduce-scatter and leaves its fp32 shard summed over the DP group.
  void finishReduce(size_t i);
  void finishGather(Bucket& b);
  void waitFor(const std::shared_ptr<Work>& work, const char* what, size_t bucket,
               std::chrono::steady_clock::time_point issued = {}, int64_t bytes = 0);
  float* shardOf(Bucket& b) { return b.buffer.data() + (bf16Wire() ? 0 : dp_rank_ * b.shard); }
  bool bf16Wire() const { return options_.bf16_communication && dp_size_ > 1; }
  int64_t wireBytes() const { return bf16Wire() ? 2 : 4; }  // per element on the wire
  // Whole chunk-flat arrays of one per-shard field (moments, master weights) from every DP rank's shards.
  void gatherShards(std::vector<float> Bucket::*field, std::vector<std::vector<float>>& out);
  // The chunks' parameters rounded to bf16, as every rank holds them after a bf16 all-gather.
  void roundParameters();
  void sumReplicatedAcrossTensorParallel();
  double globalGradientNorm();

  ZeroOptions options_;
  std::vector<Gpt<float>*> chunks_;
  const ProcessGroups& groups_;
  int64_t dp_size_, dp_rank_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> forward_order_;  // bucket indices in the order the next forward reads them
  // (chunk, begin of a range the chunk's hooks report) -> the buckets holding its parts (the front range of a
  // chunk with the tied embedding is split: wte goes to a bucket of its own)
  std::map<std::pair<int, int64_t>, std::vector<size_t>> buckets_of_;
  std::vector<int> tensor_base_;                         // first tensor index of each chunk
  int tensor_count_ = 0;
  bool final_backward_ = false;
  int64_t steps_ = 0;
  Timeline* timeline_ = nullptr;
};

}  // namespace megascale::trainer
