// The cost model and how chooseAlgorithm uses it: the tuning table answers only for the shapes it was measured
// on; every other shape gets the algorithm the link rates favour.
#include "collectives/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>

#include "collectives/algorithm_choice.h"
#include "collectives/algorithms/registry.h"
#include "collectives/host_layout.h"
#include "collectives/tuning.h"
#include "common/status.h"

namespace megascale {
namespace {

// MegaScale's rails: 200 Gbit/s NICs, a message's round trip across ToR and aggregation ~8 us.
LinkCosts railLinks() {
  LinkCosts links;
  links.network = LinkCost{8e-6, 25e9};
  return links;
}

TEST(TuningTable, AnswersOnlyForTheShapesItWasMeasuredOn) {
  EXPECT_TRUE(tunedAllReduceAlgorithm(1, 4, 1 << 20).has_value());
  EXPECT_FALSE(tunedAllReduceAlgorithm(1, 64, 1 << 20).has_value());  // measured up to 8 ranks on one host
  EXPECT_FALSE(tunedAllReduceAlgorithm(4, 2, 1 << 20).has_value());   // measured on one host only
  EXPECT_FALSE(tunedAllReduceAlgorithm(1536, 1, 1 << 20).has_value());
}

TEST(CostModel, TreeAcrossThousandsOfServersRingAcrossFew) {
  const LinkCosts links = railLinks();
  const size_t count = (size_t{128} << 20) / 4;  // 128 MiB of floats: one rail's share of MegaScale's 1 GiB
  const ClusterShape many{1536, 1, 1536}, few{8, 1, 8};
  // 3,070 ring steps of 8 us latency against 2 x 11 tree hops: the tree wins by far at 1,536 servers.
  EXPECT_LT(2 * allReduceSeconds(Algorithm::kDoubleBinaryTree, many, links, count, 4),
            allReduceSeconds(Algorithm::kRing, many, links, count, 4));
  EXPECT_EQ(modelAllReduceAlgorithm(many, links, count, 4), Algorithm::kDoubleBinaryTree);
  // On 8 servers the bandwidth term dominates: a bandwidth-optimal flat algorithm (the model sees no contention,
  // so halving-doubling's fewer latencies may edge out the ring), not the tree.
  const Algorithm on_few = modelAllReduceAlgorithm(few, links, count, 4);
  EXPECT_TRUE(on_few == Algorithm::kRing || on_few == Algorithm::kRecursiveHalvingDoubling) << algorithmName(on_few);
  // Tiny messages are latency alone: never the ring on many ranks.
  EXPECT_NE(modelAllReduceAlgorithm(many, links, 2, 4), Algorithm::kRing);
}

// An 8-byte all-reduce: direct (one round, every peer at once) on a few ranks; on thousands its n-1 sends one
// after another cost more than 2 log2(n) latencies, and of the tree and halving-doubling, which then tie, the
// tree with its few peers (connections) wins.
TEST(CostModel, SmallAllReduceDirectOnFewRanksTreeOnThousands) {
  const LinkCosts links;  // the tcp defaults
  EXPECT_EQ(modelAllReduceAlgorithm({8, 1, 8}, links, 1, 8), Algorithm::kDirect);
  EXPECT_GT(allReduceSeconds(Algorithm::kDirect, {1024, 1, 1024}, links, 1, 8),
            allReduceSeconds(Algorithm::kRecursiveHalvingDoubling, {1024, 1, 1024}, links, 1, 8));
  for (int n : {1024, 16384}) {
    const Algorithm chosen = modelAllReduceAlgorithm({n, 1, n}, links, 1, 8);
    EXPECT_EQ(chosen, Algorithm::kDoubleBinaryTree) << n << " ranks: " << algorithmName(chosen);
    EXPECT_LE(algorithmPeers(chosen, n), 6);
  }
  EXPECT_EQ(algorithmPeers(Algorithm::kRecursiveHalvingDoubling, 16384), 14);
  EXPECT_EQ(algorithmPeers(Algorithm::kRecursiveHalvingDoubling, 12), 4);  // 3 rounds and the fold's partner
  EXPECT_EQ(algorithmPeers(Algorithm::kRing, 2), 1);
}

TEST(CostModel, RingEstimateMatchesItsStepsAndLinks) {
  // 2(n-1) steps, each a latency plus a block of bytes / n on the slowest (network) link.
  const LinkCosts links = railLinks();
  const ClusterShape shape{4, 2, 8};
  const double expected = 2 * 7 * (8e-6 + 8e6 / 8 / 25e9);
  EXPECT_NEAR(allReduceSeconds(Algorithm::kRing, shape, links, 2'000'000, 4), expected, 1e-12);
  // One host: the same steps on shared memory.
  const ClusterShape one_host{1, 8, 8};
  EXPECT_NEAR(allReduceSeconds(Algorithm::kRing, one_host, links, 2'000'000, 4),
              2 * 7 * (links.local.latency_s + 8e6 / 8 / links.local.bytes_per_s), 1e-12);
}

TEST(CostModel, HierarchicalOnlyWhereHostsShareRanks) {
  const LinkCosts links = railLinks();
  EXPECT_TRUE(std::isinf(allReduceSeconds(Algorithm::kHierarchical, {1, 8, 8}, links, 1 << 20, 4)));
  EXPECT_TRUE(std::isinf(allReduceSeconds(Algorithm::kHierarchical, {8, 1, 8}, links, 1 << 20, 4)));
  // The emulated cluster's shape (4 hosts x 2 ranks, 500 Mbit/s links), 64 MiB: a ring per rail over half the
  // data each beats the flat ring, which crosses the network in every step (measured: 2.12x).
  LinkCosts slow;
  slow.network = LinkCost{100e-6, 500e6 / 8};
  const double hier = allReduceSeconds(Algorithm::kHierarchical, {4, 2, 8}, slow, 16 << 20, 4);
  const double ring = allReduceSeconds(Algorithm::kRing, {4, 2, 8}, slow, 16 << 20, 4);
  EXPECT_GT(ring / hier, 1.8);
  EXPECT_LT(ring / hier, 2.5);
  EXPECT_TRUE(std::isinf(allReduceSeconds(Algorithm::kDirect, {1, 8, 8}, links, (1 << 20) / 4 + 1, 4)));
  EXPECT_FALSE(std::isinf(allReduceSeconds(Algorithm::kDirect, {1, 8, 8}, links, (1 << 20) / 4, 4)));
}

TEST(CostModel, RanksAgreeOnTheSlowestNetworkAnyOfThemSees) {
  const LinkCost agreed = agreedNetwork({LinkReport::of({20e-6, 1.25e9}), LinkReport::of({10e-6, 12.5e6}),
                                         LinkReport{0, 5000}});  // a rank that knows no rate
  EXPECT_DOUBLE_EQ(agreed.bytes_per_s, 12.5e6);
  EXPECT_NEAR(agreed.latency_s, 20e-6, 1e-12);
  // Nobody knew a rate: the default's.
  EXPECT_DOUBLE_EQ(agreedNetwork({LinkReport{0, 0}}).bytes_per_s, LinkCosts{}.network.bytes_per_s);
}

TEST(ChooseAlgorithm, TableForMeasuredShapesModelForOthers) {
  const LinkCosts links = railLinks();
  // One host of 4 ranks: the table's row, whatever the model would say.
  ScheduleSpec measured{Collective::kAllReduce, Algorithm::kAuto, 16, 0, 4};
  measured.links = &links;
  EXPECT_EQ(chooseAlgorithm(measured, 4), *tunedAllReduceAlgorithm(1, 4, 64));
  // 1,536 hosts of one rank each, 128 MiB: no row; the model's tree.
  const HostLayout servers = HostLayout::blocks(1536, 1);
  ScheduleSpec scale{Collective::kAllReduce, Algorithm::kAuto, (size_t{128} << 20) / 4, 0, 1536, 0, false, &servers, &links};
  EXPECT_EQ(chooseAlgorithm(scale, 4), Algorithm::kDoubleBinaryTree);
  // Without a layout the spec is one host: 1,536 local ranks are not in the table either; the model answers.
  ScheduleSpec one_host{Collective::kAllReduce, Algorithm::kAuto, 1, 0, 1536};
  EXPECT_EQ(chooseAlgorithm(one_host, 4), modelAllReduceAlgorithm({1, 1536, 1536}, LinkCosts{}, 1, 4));
}

// All-to-all is priced too: Bruck's log2(n) rounds of packed blocks where latency rules (small blocks, many
// ranks across hosts), pairwise's n-1 rounds of single blocks where bandwidth does; never Bruck on 2 or 3 ranks,
// where it takes as many rounds as pairwise and copies more.
TEST(ChooseAlgorithm, AllToAllBruckForSmallBlocksPairwiseForLarge) {
  const LinkCosts links;  // 10 Gbit/s TCP: 20 us a message
  const HostLayout hosts = HostLayout::blocks(16, 1);
  ScheduleSpec small{Collective::kAllToAll, Algorithm::kAuto, 16, 0, 16, 0, false, &hosts, &links};
  EXPECT_EQ(chooseAlgorithm(small, 4), Algorithm::kBruck);
  ScheduleSpec large = small;
  large.count = 256 << 10;
  EXPECT_EQ(chooseAlgorithm(large, 4), Algorithm::kPairwise);
  for (int n : {2, 3}) {
    const HostLayout few = HostLayout::blocks(n, 1);
    ScheduleSpec tiny{Collective::kAllToAll, Algorithm::kAuto, 1, 0, n, 0, false, &few, &links};
    EXPECT_EQ(chooseAlgorithm(tiny, 4), Algorithm::kPairwise) << n << " ranks";
  }
  // The prices follow the rounds: 16 ranks, one 64 B block each way: 15 network latencies against 4 (and Bruck's
  // copies). On one host, where a message costs about what a copy does, pairwise.
  const double pairwise = collectiveSeconds(Collective::kAllToAll, Algorithm::kPairwise, {16, 1, 16}, links, 16, 4);
  const double bruck = collectiveSeconds(Collective::kAllToAll, Algorithm::kBruck, {16, 1, 16}, links, 16, 4);
  EXPECT_GT(pairwise, 15 * links.network.latency_s);
  EXPECT_LT(bruck, pairwise / 2);
  ScheduleSpec one_host{Collective::kAllToAll, Algorithm::kAuto, 16, 0, 8};
  EXPECT_EQ(chooseAlgorithm(one_host, 4), Algorithm::kPairwise);
}

// Ranks on one host with a node engine: all-reduce, all-gather and reduce-scatter are the engine's collective
// (the hierarchical row's one-host schedule) at every size, ahead of the table; what the engine does not run,
// and an explicit request, are chosen as before.
TEST(ChooseAlgorithm, OneHostWithTheEngineTakesTheEnginesCollective) {
  const HostLayout host = HostLayout::blocks(1, 4);
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter}) {
    for (size_t count : {size_t{1}, size_t{64} << 20}) {
      ScheduleSpec spec{c, Algorithm::kAuto, count, 0, 4, 0, false, &host};
      spec.host_steps = true;
      EXPECT_EQ(chooseAlgorithm(spec, 4), Algorithm::kHierarchical) << collectiveName(c) << " " << count;
      spec.host_steps = false;  // no engine (MEGASCALE_SHM_COLLECTIVES=0, or a network transport)
      EXPECT_NE(chooseAlgorithm(spec, 4), Algorithm::kHierarchical) << collectiveName(c) << " " << count;
      spec.algorithm = Algorithm::kRing;
      spec.host_steps = true;
      EXPECT_EQ(chooseAlgorithm(spec, 4), Algorithm::kRing);
    }
  }
  ScheduleSpec broadcast{Collective::kBroadcast, Algorithm::kAuto, 16, 0, 4, 0, false, &host};
  broadcast.host_steps = true;
  EXPECT_EQ(chooseAlgorithm(broadcast, 4), Algorithm::kBinomialTree);
  // Across hosts the engine serves each host's stage only: small all-reduces stay flat.
  const HostLayout two = HostLayout::blocks(2, 2);
  ScheduleSpec across{Collective::kAllReduce, Algorithm::kAuto, 2, 0, 4, 0, false, &two};
  across.host_steps = true;
  EXPECT_NE(chooseAlgorithm(across, 4), Algorithm::kHierarchical);
}

TEST(AlgorithmRequest, NamesForEveryCollectiveOrPerCollective) {
  const AlgorithmRequest ring = parseAlgorithmRequest("ring");
  EXPECT_EQ(ring.of(Collective::kAllReduce), Algorithm::kRing);
  EXPECT_EQ(ring.of(Collective::kAllGather), Algorithm::kRing);
  EXPECT_EQ(ring.of(Collective::kReduceScatter), Algorithm::kRing);
  EXPECT_EQ(ring.of(Collective::kBroadcast), Algorithm::kAuto);  // ring has no broadcast: still chosen
  EXPECT_EQ(ring.text, "ring");
  const AlgorithmRequest mixed = parseAlgorithmRequest("alltoall:bruck; allreduce:dbtree, all_gather:hier");
  EXPECT_EQ(mixed.of(Collective::kAllToAll), Algorithm::kBruck);
  EXPECT_EQ(mixed.of(Collective::kAllReduce), Algorithm::kDoubleBinaryTree);
  EXPECT_EQ(mixed.of(Collective::kAllGather), Algorithm::kHierarchical);
  EXPECT_EQ(mixed.of(Collective::kReduceScatter), Algorithm::kAuto);
  EXPECT_EQ(parseAlgorithmRequest("ring,all_reduce:auto").of(Collective::kAllReduce), Algorithm::kAuto);
  EXPECT_EQ(parseAlgorithmRequest("").text, "auto");
  auto refusal = [](const std::string& text) {
    try {
      parseAlgorithmRequest(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(refusal("rign").find("unknown algorithm 'rign' (known: auto, ring,"), std::string::npos);
  EXPECT_NE(refusal("alltoall:ring").find("ring does not implement alltoall (these do: pairwise, bruck)"),
            std::string::npos);
  EXPECT_NE(refusal("allscatter:ring").find("unknown collective 'allscatter'"), std::string::npos);
}

}  // namespace
}  // namespace megascale
