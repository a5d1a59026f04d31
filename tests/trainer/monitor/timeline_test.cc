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

TEST(Timeline, FlowsJoinTheSendingAndReceivingRanksOfAStep) {
  const auto t0 = Clock::now();
  Timeline sender(t0), receiver(t0);
  sender.setRecording(true);
  receiver.setRecording(true);
  const uint64_t key = pipelineFlowKey(3, 0, false, 1, 0);
  EXPECT_NE(key, pipelineFlowKey(3, 0, false, 0, 0)) << "another pipeline column";
  EXPECT_NE(key, pipelineFlowKey(3, 0, true, 1, 0)) << "the other direction";
  sender.flowOut("forward 3", key, t0 + milliseconds(2));
  receiver.flowIn("forward 3", key, t0 + milliseconds(3));
  const std::string out = sender.traceEvents(0, "rank 0", 0), in = receiver.traceEvents(4, "rank 4", 1);
  const auto id = [](const std::string& events) {
    const size_t at = events.find("\"id\":");
    return at == std::string::npos ? std::string() : events.substr(at, events.find(',', at) - at);
  };
  EXPECT_NE(out.find(R"("ph":"s")"), std::string::npos) << out;
  EXPECT_NE(in.find(R"("ph":"f","bp":"e")"), std::string::npos) << in;
  EXPECT_FALSE(id(out).empty());
  EXPECT_EQ(id(out), id(in)) << "one arrow";
  EXPECT_NE(in.find(R"("name":"process_sort_index","ph":"M","pid":4,"args":{"sort_index":1})"), std::string::npos);
  sender.takeStep();
  Timeline next_step(t0);
  next_step.setRecording(true);
  sender.flowOut("forward 3", key, t0 + milliseconds(9));
  EXPECT_NE(id(sender.traceEvents(0, "rank 0").substr(out.size() - 10)), id(out)) << "the next step's arrow is another";
}

}  // namespace
}  // namespace megascale::trainer
