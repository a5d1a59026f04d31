// DCQCN's reaction point against hand-computed sequences, the switch's marking curve and the receiver's CNP pacing.
#include <gtest/gtest.h>

#include <cmath>

#include "congestion/cnp_generator.h"
#include "congestion/dcqcn.h"
#include "congestion/ecn_marking.h"
#include "control_events.h"

namespace megascale::congestion {
namespace {

constexpr double kG = 1.0 / 256;
using test_events::kUs;

TEST(DcqcnPaper, AFirstCnpHalvesTheRateAndRecoveryClimbsBackByHalves) {
  Dcqcn d(DcqcnParams::paper(100e9));
  EXPECT_EQ(d.nextTimer(), kNever);  // at line rate nothing is armed
  d.onCnp(0);
  EXPECT_DOUBLE_EQ(d.alpha(0), 1.0);  // (1 - g) * 1 + g
  EXPECT_DOUBLE_EQ(d.rateBps(), 50e9);
  EXPECT_DOUBLE_EQ(d.targetRateBps(), 100e9);
  EXPECT_EQ(d.nextTimer(), 55 * kUs);
  // Fast recovery (stage < F = 5): halfway to the target at each timer expiry.
  const double expected[] = {75e9, 87.5e9, 93.75e9, 96.875e9};
  for (int i = 0; i < 4; ++i) {
    d.onTimer(d.nextTimer());
    EXPECT_DOUBLE_EQ(d.rateBps(), expected[i]) << "expiry " << i + 1;
  }
  d.onTimer(d.nextTimer());  // stage 5 = F: additive increase; the target is capped at the line rate
  EXPECT_DOUBLE_EQ(d.targetRateBps(), 100e9);
  EXPECT_DOUBLE_EQ(d.rateBps(), (100e9 + 96.875e9) / 2);
  EXPECT_EQ(d.timerStage(), 5);
}

TEST(DcqcnPaper, AlphaDecaysOncePerQuietPeriodAndTheNextCutUsesIt) {
  Dcqcn d(DcqcnParams::paper(100e9));
  d.onCnp(0);
  EXPECT_DOUBLE_EQ(d.alpha(54 * kUs), 1.0);
  EXPECT_DOUBLE_EQ(d.alpha(55 * kUs), 1 - kG);
  EXPECT_DOUBLE_EQ(d.alpha(165 * kUs), std::pow(1 - kG, 3));
  d.onTimer(55 * kUs);  // rate 75G
  d.onCnp(200 * kUs);    // three quiet periods (55, 110, 165) before it
  const double alpha = (1 - kG) * std::pow(1 - kG, 3) + kG;
  EXPECT_DOUBLE_EQ(d.alpha(200 * kUs), alpha);
  EXPECT_DOUBLE_EQ(d.targetRateBps(), 75e9);
  EXPECT_DOUBLE_EQ(d.rateBps(), 75e9 * (1 - alpha / 2));
  EXPECT_EQ(d.timerStage(), 0);  // stages restart at a cut
  EXPECT_EQ(d.nextTimer(), 255 * kUs);
}

TEST(DcqcnPaper, TheByteCounterAndHyperIncrease) {
  DcqcnParams p = DcqcnParams::paper(100e9);
  p.fast_recovery_steps = 1;
  p.byte_counter = 1000;
  Dcqcn d(p);
  d.onCnp(0);  // 50G, target 100G
  d.onCnp(1);  // 25G (alpha (1-g)+g = 1 again), target 50G
  EXPECT_DOUBLE_EQ(d.rateBps(), 25e9);
  d.onSent(2, 999);
  EXPECT_EQ(d.byteStage(), 0);
  d.onSent(3, 1);  // byte stage 1 = F, timer stage 0 < F: additive
  EXPECT_DOUBLE_EQ(d.targetRateBps(), 50e9 + 40e6);
  EXPECT_DOUBLE_EQ(d.rateBps(), (25e9 + 50.04e9) / 2);
  d.onTimer(d.nextTimer());  // timer stage 1: both at F: hyper, i = min - F + 1 = 1
  EXPECT_DOUBLE_EQ(d.targetRateBps(), 50.04e9 + 200e6);
  d.onSent(4, 1000);  // byte stage 2, timer stage 1: i = 1 again
  EXPECT_DOUBLE_EQ(d.targetRateBps(), 50.24e9 + 200e6);
}

TEST(DcqcnPaper, TheRateNeverFallsBelowTheFloor) {
  Dcqcn d(DcqcnParams::paper(100e9));
  for (int i = 0; i < 100; ++i) d.onCnp(i * kUs);
  EXPECT_DOUBLE_EQ(d.rateBps(), 1e9);
}

TEST(DcqcnFirmware, CutsAtMostEveryFourMicrosecondsWithAlphaUpdatedEachMicrosecond) {
  Dcqcn d(DcqcnParams::firmware(200e9));
  d.onCnp(0);  // nothing cut in the last period: at once, with the initial alpha 1
  EXPECT_DOUBLE_EQ(d.rateBps(), 100e9);
  d.onCnp(1 * kUs);  // pending until 4 us
  EXPECT_DOUBLE_EQ(d.rateBps(), 100e9);
  EXPECT_EQ(d.nextTimer(), 4 * kUs);
  d.onTimer(4 * kUs);
  // alpha: [0,1) held a CNP -> 1; [1,2) held one -> 1; [2,3) and [3,4) quiet -> two decays.
  const double alpha = std::pow(1 - kG, 2);
  EXPECT_DOUBLE_EQ(d.alpha(4 * kUs), alpha);
  EXPECT_DOUBLE_EQ(d.rateBps(), 100e9 * (1 - alpha / 2));
  EXPECT_EQ(d.nextTimer(), 304 * kUs);  // no CNP pending: the 300 us increase timer
  d.onTimer(304 * kUs);  // F = 1: the first expiry is already additive (5 Mb/s)
  EXPECT_DOUBLE_EQ(d.targetRateBps(), 100e9 + 5e6);
}

TEST(EcnMarking, ZeroUpToKminLinearToPmaxThenAlways) {
  const EcnThresholds t{400'000, 1'600'000, 0.2};
  EXPECT_EQ(markingProbability(0, t), 0);
  EXPECT_EQ(markingProbability(400'000, t), 0);
  EXPECT_DOUBLE_EQ(markingProbability(1'000'000, t), 0.1);
  EXPECT_DOUBLE_EQ(markingProbability(1'600'000, t), 0.2);
  EXPECT_EQ(markingProbability(1'600'001, t), 1);
  EXPECT_TRUE(shouldMark(1'000'000, t, 0.05));
  EXPECT_FALSE(shouldMark(1'000'000, t, 0.15));
  const EcnThresholds at400 = EcnThresholds::scaledTo(400e9);
  EXPECT_EQ(at400.k_min_bytes, 1'600'000u);
  EXPECT_EQ(at400.k_max_bytes, 6'400'000u);
}

TEST(CnpGenerator, AtMostOnePerIntervalAndOnlyForMarkedPackets) {
  CnpGenerator np(50 * kUs);
  EXPECT_FALSE(np.onArrival(0, false));
  EXPECT_TRUE(np.onArrival(1 * kUs, true));
  EXPECT_FALSE(np.onArrival(10 * kUs, true));
  EXPECT_FALSE(np.onArrival(50 * kUs, true));
  EXPECT_TRUE(np.onArrival(51 * kUs, true));
  EXPECT_FALSE(np.onArrival(200 * kUs, false));
}

}  // namespace
}  // namespace megascale::congestion
