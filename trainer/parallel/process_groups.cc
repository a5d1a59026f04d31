#include "trainer/parallel/process_groups.h"

#include <stdexcept>

namespace megascale::trainer {

ParallelLayout ParallelLayout::forWorld(int world, int tp, int pp) {
  if (tp < 1 || pp < 1) {
    throw std::invalid_argument("--tp and --pp must be at least 1 (got " + std::to_string(tp) + ", " +
                                std::to_string(pp) + ")");
  }
  if (world % (tp * pp) != 0) {
    throw std::invalid_argument("--tp " + std::to_string(tp) + " x --pp " + std::to_string(pp) +
                                " must divide the " + std::to_string(world) + " ranks of the job");
  }
  return ParallelLayout{tp, pp, world / (tp * pp)};
}

ParallelLayout::Coordinates ParallelLayout::coordinatesOf(int rank) const {
  return Coordinates{rank % tp, (rank / tp) % dp, rank / (tp * dp)};
}

std::string ParallelLayout::describe() const {
  return "tp" + std::to_string(tp) + " x pp" + std::to_string(pp) + " x dp" + std::to_string(dp);
}

namespace {

std::shared_ptr<Communicator> splitOrThrow(Communicator& parent, int color, int key, const char* what,
                                           Communicator::SplitOptions options = {}) {
  auto child = parent.split(color, key, options);
  if (!child && color != MSC_SPLIT_NOCOLOR) {
    throw std::runtime_error(std::string("creating the ") + what + " group on rank " + std::to_string(parent.rank()) +
                             " gave no communicator");
  }
  return child;
}

}  // namespace

ProcessGroups ProcessGroups::create(std::shared_ptr<Communicator> world, int tp, int pp, bool wrap,
                                    int pipeline_traffic_class) {
  ProcessGroups g;
  g.layout = ParallelLayout::forWorld(world->size(), tp, pp);
  g.me = g.layout.coordinatesOf(world->rank());
  g.world = world;
  const ParallelLayout& l = g.layout;
  const ParallelLayout::Coordinates& c = g.me;
  g.tp = splitOrThrow(*world, c.pp * l.dp + c.dp, c.tp, "tensor-parallel");
  g.dp = splitOrThrow(*world, c.pp * l.tp + c.tp, c.dp, "data-parallel");
  g.pp = splitOrThrow(*world, c.dp * l.tp + c.tp, c.pp, "pipeline");
  const bool holds_embedding = l.pp > 1 && (c.pp == 0 || c.pp == l.pp - 1);
  g.embedding = splitOrThrow(*g.pp, holds_embedding ? 0 : MSC_SPLIT_NOCOLOR, c.pp, "tied-embedding");

  // Edge e links pipeline rank e to e + 1 (edge P-1 wraps to 0). Edges sharing a rank are made in different
  // rounds, since a split gives each rank one communicator: even edges, odd edges, then the wrap-around.
  const int p = l.pp;
  const int edges = wrap ? p : p - 1;
  for (int round = 0; round < 3; ++round) {
    const auto in_round = [&](int e) { return e < edges && (e == p - 1 ? round == 2 : e % 2 == round); };
    int color = MSC_SPLIT_NOCOLOR, key = 0;
    const int as_sender = c.pp, as_receiver = (c.pp + p - 1) % p;  // the edges this rank starts and ends
    if (in_round(as_sender)) {
      color = as_sender;
      key = 0;
    } else if (in_round(as_receiver)) {
      color = as_receiver;
      key = 1;
    }
    const Communicator::SplitOptions link_options{pipeline_traffic_class};
    auto activations = splitOrThrow(*g.pp, color, key, "pipeline-link", link_options);
    auto gradients = splitOrThrow(*g.pp, color, key, "pipeline-link", link_options);
    if (color == MSC_SPLIT_NOCOLOR) continue;
    PipelineLink& link = key == 0 ? g.next : g.previous;
    link.activations = activations;
    link.gradients = gradients;
    link.peer = 1 - key;
    ParallelLayout::Coordinates peer = c;
    peer.pp = key == 0 ? (c.pp + 1) % p : (c.pp + p - 1) % p;
    link.peer_global = l.rankOf(peer);
  }
  return g;
}

}  // namespace megascale::trainer
