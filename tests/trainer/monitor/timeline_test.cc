#include "trainer/monitor/timeline.h"

#include <gtest/gtest.h>

namespace megascale::trainer {
namespace {

using Clock = Timeline::Clock;
using std::chrono::milliseconds;

TEST(Timeline, SumsEachStepAndTakesWaitsOutOfCompute) {
  const auto t0 = Clock::now();
  Timeline timeline(t0);
  timeline.computeSpan("F0.0", t0, t0 + milliseconds(10), false);
  timeline.waitSpan(Wait::kTensorParallel, t0 + milliseconds(2), t0 + milliseconds(5));
  timeline.computeSpan("B0.0", t0 + milliseconds(10), t0 + milliseconds(30), true);
  timeline.waitSpan(Wait::kPipeline, t0 + milliseconds(30), t0 + milliseconds(34));
  timeline.communicationSpan(Wait::kDataParallel, "gradient reduce-scatter 0", t0, t0 + milliseconds(8), 4096);
  timeline.optimizerSpan(t0 + milliseconds(34), t0 + milliseconds(40));
  const StepTimes s = timeline.takeStep();
  EXPECT_NEAR(s.forward_s, 0.010, 1e-9);
  EXPECT_NEAR(s.backward_s, 0.020, 1e-9);
  EXPECT_NEAR(s.optimizer_s, 0.006, 1e-9);
  EXPECT_NEAR(s.exposed(), 0.007, 1e-9);
  EXPECT_NEAR(s.compute(), 0.033, 1e-9);  // the TP wait is inside a span; the pipeline wait between spans
  EXPECT_EQ(s.bytes[static_cast<int>(Wait::kDataParallel)], 4096);
  EXPECT_EQ(timeline.takeStep().exposed(), 0.0);  // the next step starts from zero
}

TEST(Timeline, KeepsSpansOnlyWhileRecording) {
  const auto t0 = Clock::now();
  Timeline timeline(t0);
  timeline.computeSpan("F0.0", t0, t0 + milliseconds(1), false);
  EXPECT_EQ(timeline.traceEvents(3, "rank 3").find("\"F0.0\""), std::string::npos);
  timeline.setRecording(true);
  timeline.computeSpan("F1.0", t0 + milliseconds(1), t0 + milliseconds(3), false);
  const std::string events = timeline.traceEvents(3, "rank 3");
  EXPECT_NE(events.find(R"({"name":"F1.0","ph":"X","pid":3,"tid":0,"ts":1000.0,"dur":2000.0)"), std::string::npos)
      << events;
  EXPECT_NE(events.find(R"("args":{"name":"rank 3"})"), std::string::npos);
  EXPECT_NE(events.find(R"("args":{"name":"data-parallel comm"})"), std::string::npos);
}

}  // namespace
}  // namespace megascale::trainer
