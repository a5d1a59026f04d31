// Double binary tree all-reduce (NCCL's algorithm for many ranks). Why: a ring needs 2(n-1) steps one after
// the other, so across thousands of ranks its per-step latency dominates (the 12,288-GPU simulation: 3,070
// steps of 12 us for 3.6 us of data each); a tree needs 2 log2(n) hops. One binary tree alone would leave the
// leaves' links half idle and make the inner nodes carry twice the data, so two trees each reduce and broadcast
// half of the vector, built so that the leaves of one are the inner nodes of the other: every rank then sends
// and receives about the vector's size in each direction, as in a ring.
//
// Each half is cut into K chunks that flow through the tree as a wavefront: a node at depth d sends chunk j up
// in phase j + D - d (D: the deepest node's depth), so its children's chunk j arrived in the phase before and
// was reduced at that phase's end; the root sends chunk j down in phase j + D, and a node at depth d passes it
// on in phase j + D + d. K + 2D - 1 phases in all; a phase moves at most four chunks each way per rank.
//
// The tree over virtual ids 0..n-1 (in-order: a node's lowest set bit b gives its height): node v > 0 has
// children v - b/2 and v + h for the largest h <= b/2 with v + h < n; node 0 is the root, with one child,
// the largest power of two below n. Odd ids are the leaves. Tree 0 uses the ranks as ids; tree 1 mirrors them
// (id n-1-r) for even n and shifts them (id r+1 mod n) for odd n, which turns every odd id into an even one.
// Every element is reduced along one path and broadcast from the root, so all ranks get identical results.
#include <algorithm>

#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {
namespace {

// Chunks of at least 64 Ki elements (256 KiB of floats), at most 256 of them per half: enough to keep a tree
// of a few thousand ranks full (the best K is near sqrt(2D x bytes/bandwidth / latency)).
constexpr size_t kMaxChunksPerHalf = 256;
constexpr size_t kMinTreeChunkElements = size_t{64} << 10;

int lowestBit(int v) { return v & -v; }

struct DoubleTreeNode {
  int parent = -1;  // virtual ids; -1: none
  int children[2] = {-1, -1};
  int depth = 0;
};

int parentOf(int v, int n) {
  const int b = lowestBit(v);
  const int natural = (v ^ b) | (b << 1);  // the node one level up whose subtree holds v
  return natural < n ? natural : v ^ b;    // beyond n: v hangs on the next existing ancestor
}

DoubleTreeNode treeNode(int v, int n) {
  DoubleTreeNode node;
  if (v == 0) {
    node.children[0] = largestPowerOfTwoAtMost(n - 1);
    return node;
  }
  node.parent = parentOf(v, n);
  for (int u = v; u != 0; u = parentOf(u, n)) ++node.depth;
  const int b = lowestBit(v);
  if (b == 1) return node;
  node.children[0] = v - b / 2;
  for (int h = b / 2; h >= 1; h /= 2) {
    if (v + h < n) {
      node.children[1] = v + h;
      break;
    }
  }
  return node;
}

struct Tree {
  int index;  // 0 or 1
  int n;
  int toVirtual(int rank) const {
    if (index == 0) return rank;
    return n % 2 == 0 ? n - 1 - rank : (rank + 1) % n;
  }
  int toRank(int v) const {
    if (index == 0 || v < 0) return v;
    return n % 2 == 0 ? n - 1 - v : (v + n - 1) % n;
  }
};

size_t doubleTreeChunks(size_t half_count) {
  return std::clamp<size_t>((half_count + kMinTreeChunkElements - 1) / kMinTreeChunkElements, 1, kMaxChunksPerHalf);
}

int doubleTreeDepth(int n) {
  if (n < 2) return 0;
  int d = 1;  // node 1's path doubles its lowest bit up to the root's child, then reaches the root
  for (int p = largestPowerOfTwoAtMost(n - 1); p > 1; p /= 2) ++d;
  return d;
}

Schedule doubleTreeAllReduce(const ScheduleSpec& spec) {
  const int n = spec.nranks;
  if (n == 1) return singleRankReduction(spec.count);
  const int depth_max = doubleTreeDepth(n);
  const Block halves[2] = {blockOf(spec.count, 2, 0), blockOf(spec.count, 2, 1)};
  const size_t chunks = doubleTreeChunks(halves[0].count);
  const size_t largest_chunk = blockOf(halves[0].count, static_cast<int>(chunks), 0).count;
  const auto chunkOf = [&](int tree, size_t j) {
    const Block c = blockOf(halves[tree].count, static_cast<int>(chunks), static_cast<int>(j));
    return Block{halves[tree].begin + c.begin, c.count};
  };
  // Arrivals from children: a slot per (chunk parity, tree, child), so the next phase's receives never land
  // where this phase's reductions read.
  const auto arrival = [&](size_t j, int tree, int child, size_t count) {
    return scratch((((j % 2) * 2 + static_cast<size_t>(tree)) * 2 + static_cast<size_t>(child)) * largest_chunk, count);
  };

  Schedule s;
  s.result = out(0, spec.count);
  s.scratch_count = 8 * largest_chunk;
  const size_t phases = chunks + 2 * static_cast<size_t>(depth_max) - 1;
  s.phases.resize(phases);
  // Steps are added tree by tree, in each tree up before down: two ranks that are neighbours in both trees then
  // post their messages to each other in the same order.
  for (int t = 0; t < 2; ++t) {
    const Tree tree{t, n};
    const DoubleTreeNode node = treeNode(tree.toVirtual(spec.rank), n);
    const size_t up_phase = static_cast<size_t>(depth_max - node.depth);  // + j: send chunk j to the parent
    const size_t down_phase = static_cast<size_t>(depth_max + node.depth);  // + j: send chunk j to the children
    const bool inner = node.children[0] >= 0;
    for (size_t j = 0; j < chunks; ++j) {
      const Block c = chunkOf(t, j);
      const Slice mine = out(c.begin, c.count);
      if (inner) {  // children's chunk j arrives the phase before this node sends it on
        Phase& p = s.phases[up_phase + j - 1];
        Slice from_input = in(c.begin, c.count);
        for (int k = 0; k < 2 && node.children[k] >= 0; ++k) {
          const Slice arrived = arrival(j, t, k, c.count);
          p.comm.push_back(recv(tree.toRank(node.children[k]), arrived));
          p.local.push_back(reduce(k == 0 ? from_input : mine, arrived, mine));
        }
      }
      if (node.parent >= 0) {
        s.phases[up_phase + j].comm.push_back(send(tree.toRank(node.parent), inner ? mine : in(c.begin, c.count)));
      }
    }
    for (size_t j = 0; j < chunks; ++j) {
      const Block c = chunkOf(t, j);
      const Slice mine = out(c.begin, c.count);
      if (node.parent >= 0) s.phases[down_phase + j - 1].comm.push_back(recv(tree.toRank(node.parent), mine));
      for (int k = 0; k < 2 && node.children[k] >= 0; ++k) {
        s.phases[down_phase + j].comm.push_back(send(tree.toRank(node.children[k]), mine));
      }
    }
  }
  return s;
}

// K + 2D - 1 phases; in each, the busiest rank receives four chunks of half / K (two from its children, one from
// its parent in each tree) and sends as many.
double doubleTreeAllReduceSeconds(const ClusterShape& shape, const LinkCosts& links, size_t count, size_t dtype_size) {
  const double bytes = static_cast<double>(count * dtype_size);
  const double chunks = static_cast<double>(doubleTreeChunks((count + 1) / 2));
  const double phases = chunks + 2.0 * doubleTreeDepth(shape.ranks) - 1;
  return phases * shape.flatLink(links).transfer(4 * (bytes / 2) / chunks);
}

}  // namespace

const AlgorithmRow& doubleTreeRow() {
  static const AlgorithmRow row{
      .id = Algorithm::kDoubleBinaryTree,
      .name = "dbtree",
      .builders = byCollective<Builder>({{Collective::kAllReduce, doubleTreeAllReduce}}),
      .costs = byCollective<CostFunction>({{Collective::kAllReduce, doubleTreeAllReduceSeconds}}),
      .peers = [](int nranks) { return std::min(nranks - 1, 6); }};  // a parent and two children in each tree
  return row;
}

}  // namespace megascale::algorithms
