// The trainer's process groups, laid out as Megatron-LM and MegaScale do: an ordered list of named dimensions,
// tensor parallel innermost (a TP group is consecutive ranks, so it stays inside a host), then data parallel,
// then pipeline parallel: rank = tp + T * (dp + D * pp). Every group is a strided split of the world
// communicator along one dimension (no exchange, no store: each rank computes its groups from the layout); the pipeline's links are
// two-rank communicators per direction and kind, so activations and gradients each travel on a FIFO of their
// own and a send never queues behind a receive.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"

namespace megascale::trainer {

/// A dimension of parallelism. Adding one (context or expert parallelism) is a value here, its name, and its
/// place in the layout's order; the groups along it follow.
enum class ParallelAxis : uint8_t { kTensor, kData, kPipeline };
inline constexpr size_t kParallelAxes = 3;
const char* axisName(ParallelAxis axis);  // "tp", "dp", "pp"

/// The layout as an ordered list of named dimensions, innermost first: rank = sum over dimensions of
/// coordinate x stride, a dimension's stride the product of the sizes inside it. Megatron-LM's order is
/// tp, dp, pp: a tensor-parallel group is consecutive ranks (one host), a data-parallel group next.
struct ParallelLayout {
  struct Dimension {
    ParallelAxis axis;
    int size;
  };
  std::vector<Dimension> dimensions;  // innermost first; every axis at most once (absent: size 1)

  /// A rank's place along every axis.
  struct Coordinates {
    std::array<int, kParallelAxes> along{};
    int operator[](ParallelAxis axis) const { return along[static_cast<size_t>(axis)]; }
    int& operator[](ParallelAxis axis) { return along[static_cast<size_t>(axis)]; }
    int tp() const { return (*this)[ParallelAxis::kTensor]; }
    int dp() const { return (*this)[ParallelAxis::kData]; }
    int pp() const { return (*this)[ParallelAxis::kPipeline]; }
  };

  /// tp, dp, pp with D = world / (T x P). Throws std::invalid_argument unless T x P divides the world.
  static ParallelLayout forWorld(int world, int tp, int pp);
  int size(ParallelAxis axis) const;    // 1 for an axis the layout lacks
  int stride(ParallelAxis axis) const;  // the product of the sizes inside it
  int tp() const { return size(ParallelAxis::kTensor); }
  int dp() const { return size(ParallelAxis::kData); }
  int pp() const { return size(ParallelAxis::kPipeline); }
  int worldSize() const;
  Coordinates coordinatesOf(int rank) const;
  int rankOf(const Coordinates& c) const;
  /// The world ranks that differ from `me` only along `axis`, in coordinate order: an arithmetic progression.
  Communicator::RankStride groupAlong(ParallelAxis axis, const Coordinates& me) const;
  /// "tp2 x pp2 x dp2" (reports name them in that order); describe("x"): "tp2xpp2xdp2", a checkpoint's.
  std::string describe(const char* separator = " x ") const;
  std::string describe(const Coordinates& c) const;  // "tp 1 pp 0 dp 1"
};

/// One direction of a pipeline link: a two-rank communicator and the other end's rank in it.
struct PipelineLink {
  std::shared_ptr<Communicator> activations;  // carries forward activations (next stage receives)
  std::shared_ptr<Communicator> gradients;    // carries activation gradients (previous stage receives)
  int peer = -1;                              // the other end, in both communicators
  int peer_global = -1;                       // the other end's world rank (for errors)
};

struct ProcessGroups {
  ParallelLayout layout;
  ParallelLayout::Coordinates me;
  std::shared_ptr<Communicator> world;
  /// A communicator along each axis of the layout (ranks in coordinate order), and the three by name.
  std::array<std::shared_ptr<Communicator>, kParallelAxes> along;
  std::shared_ptr<Communicator> tp, dp, pp;
  /// The first and last pipeline stage of one (tp, dp) column: the tied embedding's two copies. Null when
  /// this rank is on neither or there is one stage.
  std::shared_ptr<Communicator> embedding;
  /// Toward the next pipeline rank (this rank sends activations, receives gradients) and from the previous one.
  /// With wrap-around (interleaved schedules) the last rank's next is rank 0. Unset where there is no link.
  PipelineLink next, previous;

  /// Collective over `world`: every rank calls it with the same arguments. wrap: link the last pipeline rank
  /// back to the first (interleaved 1F1B).
  /// pipeline_traffic_class: the pipeline links' traffic class (Communicator::SplitOptions); -1 the world's.
  static ProcessGroups create(std::shared_ptr<Communicator> world, int tp, int pp, bool wrap,
                              int pipeline_traffic_class = -1);
};

}  // namespace megascale::trainer
