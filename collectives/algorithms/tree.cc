// Binomial trees over ranks relative to the root (vr = rank - root mod n). Why: the root's data reaches all
// n ranks in ceil(log2 n) rounds. The parent of vr is vr minus its highest set bit; the children of vr are
// vr + 2^k for every 2^k above vr's highest bit. Broadcast sends to children nearest first (the subtree
// that must forward furthest starts earliest); reduce receives in the mirror order.
#include <algorithm>

#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

namespace {

int highestBit(int v) {
  int b = 1;
  while (b * 2 <= v) b *= 2;
  return b;
}

struct TreeNode {
  int parent = -1;            // real rank; -1 at the root
  std::vector<int> children;  // real ranks, nearest (smallest subtree distance) first
};

TreeNode binomialNode(int rank, int root, int n) {
  TreeNode node;
  int vr = ((rank - root) % n + n) % n;
  auto real = [&](int v) { return (v + root) % n; };
  if (vr != 0) node.parent = real(vr - highestBit(vr));
  for (int step = vr == 0 ? 1 : highestBit(vr) * 2; vr + step < n; step *= 2) node.children.push_back(real(vr + step));
  return node;
}

Schedule treeBroadcast(const ScheduleSpec& spec) {
  const size_t c = spec.count;
  TreeNode node = binomialNode(spec.rank, spec.root, spec.nranks);
  Schedule s;
  s.result = out(0, c);
  if (node.parent < 0) s.phases.push_back(copyPhase(in(0, c), out(0, c)));
  else s.phases.push_back(Phase{{recv(node.parent, out(0, c))}, {}});
  for (int child : node.children) s.phases.push_back(Phase{{send(child, out(0, c))}, {}});
  return s;
}

Schedule treeReduce(const ScheduleSpec& spec) {
  const size_t c = spec.count;
  TreeNode node = binomialNode(spec.rank, spec.root, spec.nranks);
  bool is_root = node.parent < 0;
  Schedule s;
  // The root accumulates in its output; other ranks in scratch, leaving their output untouched.
  Slice acc = is_root ? out(0, c) : scratch(0, c);
  s.result = is_root ? out(0, c) : out(0, 0);
  if (is_root && node.children.empty()) s.phases.push_back(copyPhase(in(0, c), out(0, c)));
  if (!node.children.empty()) s.scratch_count = is_root ? c : 2 * c;
  Slice incoming = is_root ? scratch(0, c) : scratch(c, c);
  bool first = true;
  for (auto it = node.children.rbegin(); it != node.children.rend(); ++it) {  // furthest child finishes first
    s.phases.push_back(Phase{{recv(*it, incoming)}, {reduce(first ? in(0, c) : acc, incoming, acc)}});
    first = false;
  }
  if (!is_root) s.phases.push_back(Phase{{send(node.parent, node.children.empty() ? in(0, c) : acc)}, {}});
  return s;
}

}  // namespace

const AlgorithmRow& treeRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kBinomialTree,
      .name = "tree",
      .builders = byCollective<Builder>({{Collective::kBroadcast, treeBroadcast}, {Collective::kReduce, treeReduce}}),
      .default_for = collectiveBit(Collective::kBroadcast) | collectiveBit(Collective::kReduce),
      .peers = [](int nranks) { return std::min(nranks - 1, log2Ceiling(nranks) + 1); }};
  return row;
}

}  // namespace megascale::algorithms
