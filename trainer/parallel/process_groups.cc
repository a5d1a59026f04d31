#include "trainer/parallel/process_groups.h"

#include <stdexcept>

#include "collectives/flight_recorder.h"

namespace megascale::trainer {

const char* axisName(ParallelAxis axis) {
  switch (axis) {
    case ParallelAxis::kTensor: return "tp";
    case ParallelAxis::kData: return "dp";
    case ParallelAxis::kPipeline: return "pp";
  }
  return "?";
}

ParallelLayout ParallelLayout::forWorld(int world, int tp, int pp) {
  if (tp < 1 || pp < 1) {
    throw std::invalid_argument("--tp and --pp must be at least 1 (got " + std::to_string(tp) + ", " +
                                std::to_string(pp) + ")");
  }
  if (world % (tp * pp) != 0) {
    throw std::invalid_argument("--tp " + std::to_string(tp) + " x --pp " + std::to_string(pp) +
                                " must divide the " + std::to_string(world) + " ranks of the job");
  }
  return ParallelLayout{
      {{ParallelAxis::kTensor, tp}, {ParallelAxis::kData, world / (tp * pp)}, {ParallelAxis::kPipeline, pp}}};
}

int ParallelLayout::size(ParallelAxis axis) const {
  for (const Dimension& d : dimensions) {
    if (d.axis == axis) return d.size;
  }
  return 1;
}

int ParallelLayout::stride(ParallelAxis axis) const {
  int stride = 1;
  for (const Dimension& d : dimensions) {
    if (d.axis == axis) return stride;
    stride *= d.size;
  }
  return stride;  // an absent axis: its only coordinate is 0
}

int ParallelLayout::worldSize() const {
  int world = 1;
  for (const Dimension& d : dimensions) world *= d.size;
  return world;
}

ParallelLayout::Coordinates ParallelLayout::coordinatesOf(int rank) const {
  Coordinates c;
  for (const Dimension& d : dimensions) {
    c[d.axis] = rank % d.size;
    rank /= d.size;
  }
  return c;
}

int ParallelLayout::rankOf(const Coordinates& c) const {
  int rank = 0;
  for (auto d = dimensions.rbegin(); d != dimensions.rend(); ++d) rank = rank * d->size + c[d->axis];
  return rank;
}

Communicator::RankStride ParallelLayout::groupAlong(ParallelAxis axis, const Coordinates& me) const {
  Coordinates first = me;
  first[axis] = 0;
  return Communicator::RankStride{rankOf(first), stride(axis), size(axis)};
}

std::string ParallelLayout::describe(const char* separator) const {
  std::string text;
  for (ParallelAxis axis : {ParallelAxis::kTensor, ParallelAxis::kPipeline, ParallelAxis::kData}) {
    text += (text.empty() ? "" : separator) + std::string(axisName(axis)) + std::to_string(size(axis));
  }
  return text;
}

std::string ParallelLayout::describe(const Coordinates& c) const {
  std::string text;
  for (ParallelAxis axis : {ParallelAxis::kTensor, ParallelAxis::kPipeline, ParallelAxis::kData}) {
    text += (text.empty() ? "" : " ") + std::string(axisName(axis)) + " " + std::to_string(c[axis]);
  }
  return text;
}

namespace {

const char* axisTitle(ParallelAxis axis) {
  switch (axis) {
    case ParallelAxis::kTensor: return "tensor-parallel";
    case ParallelAxis::kData: return "data-parallel";
    case ParallelAxis::kPipeline: return "pipeline";
  }
  return "parallel";
}

// `name`: the group's name in heartbeats (common/heartbeat.h), at most 8 characters.
std::shared_ptr<Communicator> splitOrThrow(Communicator& parent, const Communicator::RankStride& group, const char* what,
                                           const char* name, Communicator::SplitOptions options = {}) {
  auto child = parent.splitStrided(group, options);
  if (!child && group.count > 0) {
    throw std::runtime_error(std::string("creating the ") + what + " group on rank " + std::to_string(parent.rank()) +
                             " gave no communicator");
  }
  if (child) child->setName(name);
  return child;
}

}  // namespace

ProcessGroups ProcessGroups::create(std::shared_ptr<Communicator> world, int tp, int pp, bool wrap,
                                    int pipeline_traffic_class) {
  ProcessGroups g;
  g.layout = ParallelLayout::forWorld(world->size(), tp, pp);
  g.me = g.layout.coordinatesOf(world->rank());
  // Dumps and diagnoses name a rank by its place in the 3D layout.
  flight::Recorder::process().setCoordinates(g.layout.describe(g.me));
  g.world = world;
  const ParallelLayout& l = g.layout;
  const ParallelLayout::Coordinates& c = g.me;
  // A group along each dimension, in the layout's order: an arithmetic progression of world ranks that each
  // rank computes from the layout, with no exchange and no store traffic, whatever the world's size.
  for (const ParallelLayout::Dimension& d : l.dimensions) {
    g.along[static_cast<size_t>(d.axis)] =
        splitOrThrow(*world, l.groupAlong(d.axis, c), axisTitle(d.axis), axisName(d.axis));
  }
  g.tp = g.along[static_cast<size_t>(ParallelAxis::kTensor)];
  g.dp = g.along[static_cast<size_t>(ParallelAxis::kData)];
  g.pp = g.along[static_cast<size_t>(ParallelAxis::kPipeline)];
  const bool holds_embedding = l.pp() > 1 && (c.pp() == 0 || c.pp() == l.pp() - 1);
  g.embedding = splitOrThrow(*g.pp, {0, l.pp() - 1, holds_embedding ? 2 : 0}, "tied-embedding", "embed");

  // Edge e links pipeline rank e to e + 1 (edge P-1 wraps to 0). Edges sharing a rank are made in different
  // rounds, since a split gives each rank one communicator: even edges, odd edges, then the wrap-around.
  const int p = l.pp();
  const int edges = p == 1 ? 0 : (wrap ? p : p - 1);
  for (int round = 0; round < 3; ++round) {
    const auto in_round = [&](int e) { return e < edges && (e == p - 1 ? round == 2 : e % 2 == round); };
    const auto edge = [&](int e) { return Communicator::RankStride{e, (e + 1) % p - e, 2}; };  // sender first
    const int as_sender = c.pp(), as_receiver = (c.pp() + p - 1) % p;  // the edges this rank starts and ends
    Communicator::RankStride group{0, 1, 0};
    int key = 0;
    if (in_round(as_sender)) {
      group = edge(as_sender);
    } else if (in_round(as_receiver)) {
      group = edge(as_receiver);
      key = 1;
    }
    const Communicator::SplitOptions link_options{pipeline_traffic_class};
    auto activations = splitOrThrow(*g.pp, group, "pipeline-link", "pp-act", link_options);
    auto gradients = splitOrThrow(*g.pp, group, "pipeline-link", "pp-grad", link_options);
    if (group.count == 0) continue;
    PipelineLink& link = key == 0 ? g.next : g.previous;
    link.activations = activations;
    link.gradients = gradients;
    link.peer = 1 - key;
    ParallelLayout::Coordinates peer = c;
    peer[ParallelAxis::kPipeline] = key == 0 ? (c.pp() + 1) % p : (c.pp() + p - 1) % p;
    link.peer_global = l.rankOf(peer);
  }
  return g;
}

}  // namespace megascale::trainer
