// The trainer's process groups, laid out as Megatron-LM and MegaScale do: tensor parallel innermost (a TP
// group is consecutive ranks, so it stays inside a host), then data parallel, then pipeline parallel:
// rank = tp + T * (dp + D * pp). Every group is a strided split of the world communicator (no exchange, no
// store: each rank computes its groups from the layout); the pipeline's links are
// two-rank communicators per direction and kind, so activations and gradients each travel on a FIFO of their
// own and a send never queues behind a receive.
#pragma once

#include <memory>
#include <string>

#include "collectives/communicator.h"

namespace megascale::trainer {

struct ParallelLayout {
  int tp = 1, pp = 1, dp = 1;

  struct Coordinates {
    int tp = 0, dp = 0, pp = 0;
  };
  /// D = world / (T x P). Throws std::invalid_argument unless T x P divides the world.
  static ParallelLayout forWorld(int world, int tp, int pp);
  int worldSize() const { return tp * pp * dp; }
  Coordinates coordinatesOf(int rank) const;
  int rankOf(const Coordinates& c) const { return c.tp + tp * (c.dp + dp * c.pp); }
  std::string describe() const;  // "tp2 x pp2 x dp2"
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
  std::shared_ptr<Communicator> world, tp, dp, pp;
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
