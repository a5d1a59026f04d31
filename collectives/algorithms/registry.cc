#include "collectives/algorithms/algorithms.h"

namespace megascale::algorithms {

Builder builderFor(Collective collective, Algorithm algorithm) {
  switch (collective) {
    case Collective::kAllReduce:
      if (algorithm == Algorithm::kRing) return ringAllReduce;
      if (algorithm == Algorithm::kRecursiveHalvingDoubling) return halvingDoublingAllReduce;
      if (algorithm == Algorithm::kDirect) return directAllReduce;
      if (algorithm == Algorithm::kHierarchical) return hierarchicalAllReduce;
      if (algorithm == Algorithm::kDoubleBinaryTree) return doubleTreeAllReduce;
      if (algorithm == Algorithm::kPipelinedRing) return pipelinedRingAllReduce;
      return nullptr;
    case Collective::kAllGather:
      if (algorithm == Algorithm::kHierarchical) return hierarchicalAllGather;
      return algorithm == Algorithm::kRing ? ringAllGather : nullptr;
    case Collective::kReduceScatter:
      if (algorithm == Algorithm::kHierarchical) return hierarchicalReduceScatter;
      return algorithm == Algorithm::kRing ? ringReduceScatter : nullptr;
    case Collective::kBroadcast: return algorithm == Algorithm::kBinomialTree ? treeBroadcast : nullptr;
    case Collective::kReduce: return algorithm == Algorithm::kBinomialTree ? treeReduce : nullptr;
    case Collective::kAllToAll: return algorithm == Algorithm::kPairwise ? pairwiseAllToAll : nullptr;
    case Collective::kBarrier: return algorithm == Algorithm::kDissemination ? disseminationBarrier : nullptr;
    case Collective::kSendRecv: return nullptr;
  }
  return nullptr;
}

}  // namespace megascale::algorithms
